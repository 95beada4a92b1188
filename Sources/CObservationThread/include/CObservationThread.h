#ifndef LIVEDEFAULTS_COBSERVATIONTHREAD_H
#define LIVEDEFAULTS_COBSERVATIONTHREAD_H

#include <stdbool.h>

// Whether the calling thread is delivering observations (running an observer's callback, or the
// delivery loop that calls them): a thread-local flag, read and written inline, without Swift's or
// Foundation's thread-local storage (docs/design.md, "Observation: the set path and its delivery").
extern _Thread_local bool livedefaults_observation_thread_delivering;

static inline bool livedefaults_is_delivering(void) { return livedefaults_observation_thread_delivering; }

static inline void livedefaults_set_delivering(bool delivering) {
    livedefaults_observation_thread_delivering = delivering;
}

#endif
