// Fixed-arity wrappers around libcurl's variadic setopt/getinfo calls, which Swift
// cannot call directly. Nothing here leaves the CurlTransfer module.
#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

#include <curl/curl.h>

static inline CURLcode curl_shim_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode curl_shim_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode curl_shim_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode curl_shim_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode curl_shim_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode curl_shim_setopt_write_function(CURL *handle, size_t (*fn)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, fn);
}
static inline CURLcode curl_shim_setopt_header_function(CURL *handle, size_t (*fn)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, fn);
}
static inline CURLcode curl_shim_setopt_xferinfo_function(CURL *handle, int (*fn)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t)) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, fn);
}
static inline CURLcode curl_shim_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode curl_shim_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode curl_shim_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLMcode curl_shim_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

#endif
