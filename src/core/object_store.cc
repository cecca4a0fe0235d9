#include "dataflux/object_store.h"

#include "core/thread_pool.h"

namespace dataflux {

void ObjectStore::read_object_async(const ReadObjectRequest& request, char* buffer,
                                    std::size_t capacity, AsyncCallback<ReadObjectResult> done) {
  internal::ThreadPool::shared().run([this, request, buffer, capacity, done = std::move(done)] {
    done(read_object(request, buffer, capacity));
  });
}

}  // namespace dataflux
