#ifndef LIVEDEFAULTS_CINOTIFYTOOLS_SHIM_H
#define LIVEDEFAULTS_CINOTIFYTOOLS_SHIM_H

#include <inotifytools/inotifytools.h>
#include <sys/inotify.h>

#endif
