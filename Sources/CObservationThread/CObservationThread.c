#include "CObservationThread.h"

_Thread_local bool livedefaults_observation_thread_delivering = false;
