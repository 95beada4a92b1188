#ifndef LIVEDEFAULTS_CTIMERFD_SHIM_H
#define LIVEDEFAULTS_CTIMERFD_SHIM_H

// Linux's timerfd (glibc's <sys/timerfd.h>), which Swift's Glibc module does not include.
#include <sys/timerfd.h>

#endif
