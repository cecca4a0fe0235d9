// dataflux::Error: how the libtorch-facing API reports failures.
//
// The core returns absl::Status; datasets and checkpoints throw, as libtorch does. An Error
// carries the status, so callers can still branch on the code.
//
//   try {
//     dataflux::throw_if_error(store->delete_object({"b", "o"}));
//   } catch (const dataflux::Error& e) {
//     if (e.status().code() == absl::StatusCode::kNotFound) { /* already gone */ }
//   }
#ifndef DATAFLUX_ERROR_H_
#define DATAFLUX_ERROR_H_

#include <stdexcept>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dataflux {

class Error : public std::runtime_error {
 public:
  explicit Error(absl::Status status);
  const absl::Status& status() const noexcept { return status_; }
  absl::StatusCode code() const noexcept { return status_.code(); }

 private:
  absl::Status status_;
};

// Throws Error unless `status` is OK.
void throw_if_error(const absl::Status& status);

// The value, or throws Error with the status.
template <typename T>
T value_or_throw(absl::StatusOr<T> result) {
  if (!result.ok()) throw Error(std::move(result).status());
  return *std::move(result);
}

}  // namespace dataflux

#endif  // DATAFLUX_ERROR_H_
