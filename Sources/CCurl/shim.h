#ifndef LIVEDEFAULTS_CCURL_SHIM_H
#define LIVEDEFAULTS_CCURL_SHIM_H

#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/prctl.h>
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
    void (*easy_reset)(CURL *handle);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_add_handle)(CURLM *multi, CURL *handle);
    CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *handle);
    CURLMcode (*multi_perform)(CURLM *multi, int *running);
    CURLMcode (*multi_poll)(CURLM *multi, struct curl_waitfd extra[], unsigned int count, int timeout, int *ready);
    CURLMcode (*multi_wakeup)(CURLM *multi);
    CURLMsg *(*multi_info_read)(CURLM *multi, int *left);
    CURLMcode (*multi_setopt)(CURLM *multi, CURLMoption option, ...);
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
    f->easy_reset = (void (*)(CURL *))dlsym(library, "curl_easy_reset");
    f->multi_init = (CURLM * (*)(void)) dlsym(library, "curl_multi_init");
    f->multi_add_handle = (CURLMcode(*)(CURLM *, CURL *))dlsym(library, "curl_multi_add_handle");
    f->multi_remove_handle = (CURLMcode(*)(CURLM *, CURL *))dlsym(library, "curl_multi_remove_handle");
    f->multi_perform = (CURLMcode(*)(CURLM *, int *))dlsym(library, "curl_multi_perform");
    f->multi_poll = (CURLMcode(*)(CURLM *, struct curl_waitfd[], unsigned int, int, int *))dlsym(
        library, "curl_multi_poll");
    f->multi_wakeup = (CURLMcode(*)(CURLM *))dlsym(library, "curl_multi_wakeup");
    f->multi_info_read = (CURLMsg * (*)(CURLM *, int *)) dlsym(library, "curl_multi_info_read");
    f->multi_setopt = (CURLMcode(*)(CURLM *, CURLMoption, ...))dlsym(library, "curl_multi_setopt");
    f->loaded = f->easy_reset && f->multi_init && f->multi_add_handle && f->multi_remove_handle && f->multi_perform
        && f->multi_poll && f->multi_wakeup && f->multi_info_read && f->multi_setopt && f->global_init && f->easy_init && f->easy_cleanup && f->easy_perform && f->easy_strerror
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

/// Names the calling thread (as ps, top and /proc/self/task/*/comm show it; 15 bytes at most).
static inline void ldcurl_name_this_thread(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

// The multi interface: every long-lived watch stream of the process on one thread (docs/design.md,
// "Fleet settings: threads and connections").

static inline void ldcurl_easy_reset(CURL *handle) { ldcurl_library()->easy_reset(handle); }

static inline CURLM *ldcurl_multi_init(void) { return ldcurl_library() ? ldcurl_library()->multi_init() : NULL; }

static inline CURLMcode ldcurl_multi_add(CURLM *multi, CURL *handle) {
    return ldcurl_library()->multi_add_handle(multi, handle);
}

static inline CURLMcode ldcurl_multi_remove(CURLM *multi, CURL *handle) {
    return ldcurl_library()->multi_remove_handle(multi, handle);
}

static inline CURLMcode ldcurl_multi_perform(CURLM *multi, int *running) {
    return ldcurl_library()->multi_perform(multi, running);
}

static inline CURLMcode ldcurl_multi_poll(CURLM *multi, int timeout_ms) {
    int ready = 0;
    return ldcurl_library()->multi_poll(multi, NULL, 0, timeout_ms, &ready);
}

static inline CURLMcode ldcurl_multi_wakeup(CURLM *multi) { return ldcurl_library()->multi_wakeup(multi); }

static inline CURLMcode ldcurl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return ldcurl_library()->multi_setopt(multi, option, value);
}

/// The next finished transfer: 1 with its handle and result, 0 when there is none.
static inline int ldcurl_multi_next_done(CURLM *multi, CURL **handle, CURLcode *result) {
    int left = 0;
    CURLMsg *message;
    while ((message = ldcurl_library()->multi_info_read(multi, &left)) != NULL) {
        if (message->msg == CURLMSG_DONE) {
            *handle = message->easy_handle;
            *result = message->data.result;
            return 1;
        }
    }
    return 0;
}

#endif
