#ifndef LIVEDEFAULTS_CCURL_SHIM_H
#define LIVEDEFAULTS_CCURL_SHIM_H

#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

// libcurl is loaded at the first call, with dlopen, not linked: linking it makes every program that
// links LiveDefaultsEtcd (the `defaults` command among them) map libcurl and its ~30 libraries (TLS,
// Kerberos, LDAP, …) at start-up, about 4 ms of each one-shot `defaults read` that never goes near etcd
// (docs/design.md, "The `defaults` command's start-up"). The header above is used for its types only.

typedef struct {
    int loaded;
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *handle);
    CURLcode (*easy_perform)(CURL *handle);
    const char *(*easy_strerror)(CURLcode code);
    CURLcode (*easy_setopt)(CURL *handle, CURLoption option, ...);
    CURLcode (*easy_getinfo)(CURL *handle, CURLINFO info, ...);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *text);
    void (*slist_free_all)(struct curl_slist *list);
} ldcurl_functions;

static inline ldcurl_functions *ldcurl_storage(void) {
    static ldcurl_functions functions;
    return &functions;
}

static inline void ldcurl_load(void) {
    ldcurl_functions *f = ldcurl_storage();
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return;
    f->global_init = (CURLcode(*)(long))dlsym(library, "curl_global_init");
    f->easy_init = (CURL * (*)(void)) dlsym(library, "curl_easy_init");
    f->easy_cleanup = (void (*)(CURL *))dlsym(library, "curl_easy_cleanup");
    f->easy_perform = (CURLcode(*)(CURL *))dlsym(library, "curl_easy_perform");
    f->easy_strerror = (const char *(*)(CURLcode))dlsym(library, "curl_easy_strerror");
    f->easy_setopt = (CURLcode(*)(CURL *, CURLoption, ...))dlsym(library, "curl_easy_setopt");
    f->easy_getinfo = (CURLcode(*)(CURL *, CURLINFO, ...))dlsym(library, "curl_easy_getinfo");
    f->slist_append = (struct curl_slist * (*)(struct curl_slist *, const char *)) dlsym(library, "curl_slist_append");
    f->slist_free_all = (void (*)(struct curl_slist *))dlsym(library, "curl_slist_free_all");
    f->loaded = f->global_init && f->easy_init && f->easy_cleanup && f->easy_perform && f->easy_strerror
        && f->easy_setopt && f->easy_getinfo && f->slist_append && f->slist_free_all;
}

/// The loaded library's functions, or NULL when libcurl.so.4 (Debian's libcurl4) cannot be loaded.
static inline const ldcurl_functions *ldcurl_library(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, ldcurl_load);
    return ldcurl_storage()->loaded ? ldcurl_storage() : NULL;
}

static inline int ldcurl_available(void) { return ldcurl_library() != NULL; }

static inline CURLcode ldcurl_global_init(long flags) {
    return ldcurl_library() ? ldcurl_library()->global_init(flags) : CURLE_FAILED_INIT;
}

static inline CURL *ldcurl_easy_init(void) { return ldcurl_library() ? ldcurl_library()->easy_init() : NULL; }

static inline void ldcurl_easy_cleanup(CURL *handle) { ldcurl_library()->easy_cleanup(handle); }

static inline CURLcode ldcurl_easy_perform(CURL *handle) { return ldcurl_library()->easy_perform(handle); }

static inline const char *ldcurl_easy_strerror(CURLcode code) { return ldcurl_library()->easy_strerror(code); }

static inline struct curl_slist *ldcurl_slist_append(struct curl_slist *list, const char *text) {
    return ldcurl_library()->slist_append(list, text);
}

static inline void ldcurl_slist_free_all(struct curl_slist *list) {
    if (list != NULL) ldcurl_library()->slist_free_all(list);
}

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed wrapper
// per kind of argument.

static inline CURLcode ldcurl_setopt_long(CURL *handle, CURLoption option, long value) {
    return ldcurl_library()->easy_setopt(handle, option, value);
}

static inline CURLcode ldcurl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return ldcurl_library()->easy_setopt(handle, option, value);
}

static inline CURLcode ldcurl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return ldcurl_library()->easy_setopt(handle, option, value);
}

static inline CURLcode ldcurl_setopt_large(CURL *handle, CURLoption option, curl_off_t value) {
    return ldcurl_library()->easy_setopt(handle, option, value);
}

typedef size_t (*ldcurl_write_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*ldcurl_progress_callback)(void *context, curl_off_t, curl_off_t, curl_off_t, curl_off_t);

static inline CURLcode ldcurl_setopt_write(CURL *handle, ldcurl_write_callback callback) {
    return ldcurl_library()->easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

static inline CURLcode ldcurl_setopt_progress(CURL *handle, ldcurl_progress_callback callback) {
    return ldcurl_library()->easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

static inline long ldcurl_response_code(CURL *handle) {
    long code = 0;
    ldcurl_library()->easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

#endif
