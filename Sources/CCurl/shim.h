#ifndef LIVEDEFAULTS_CCURL_SHIM_H
#define LIVEDEFAULTS_CCURL_SHIM_H

#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed wrapper
// per kind of argument.

static inline CURLcode ldcurl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ldcurl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ldcurl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ldcurl_setopt_large(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

typedef size_t (*ldcurl_write_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*ldcurl_progress_callback)(void *context, curl_off_t, curl_off_t, curl_off_t, curl_off_t);

static inline CURLcode ldcurl_setopt_write(CURL *handle, ldcurl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

static inline CURLcode ldcurl_setopt_progress(CURL *handle, ldcurl_progress_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

static inline long ldcurl_response_code(CURL *handle) {
    long code = 0;
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

#endif
