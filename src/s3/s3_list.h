// ListObjectsV2 for the ObjectStore listing contract: request parameters from a
// ListObjectsRequest, and the page from a ListBucketResult document.
//
// S3 has `start-after` (exclusive) where the contract has start_offset (inclusive), and no
// end offset: list_query() picks a start-after just below start_offset and the page is
// filtered to [start_offset, end_offset) here, ending the listing at end_offset.
//
//   auto page = parse_list_page(body, request, "LIST s3://b/prefix");
#ifndef DATAFLUX_SRC_S3_S3_LIST_H_
#define DATAFLUX_SRC_S3_S3_LIST_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "dataflux/object_store.h"

namespace dataflux::internal {

// A start-after value that admits every name >= start (and as few names below it as
// practical; parse_list_page drops those).
std::string start_after_for(std::string_view start);

// The ListObjectsV2 query parameters (list-type=2, prefix, delimiter, max-keys,
// continuation-token, start-after).
std::vector<std::pair<std::string, std::string>> list_query(const ListObjectsRequest& request);

// ObjectMetadata fields from an S3 ETag: md5_hash when the ETag is a plain MD5 ("hex32").
std::string md5_base64_from_etag(std::string_view etag);

absl::StatusOr<ListObjectsPage> parse_list_page(std::string_view body,
                                                const ListObjectsRequest& request,
                                                std::string_view context);

// "2009-10-12T17:50:30.000Z" or an RFC 1123 date ("Wed, 12 Oct 2009 17:50:30 GMT").
std::chrono::system_clock::time_point parse_s3_time(std::string_view text);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_S3_S3_LIST_H_
