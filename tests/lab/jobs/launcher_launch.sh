#!/bin/sh
# A cluster-style wrapper: start the trainer in the background with nohup and exit 0 at once,
# as many site launchers and torchrun's agent do.  Usage: sh launcher_launch.sh PYTHON MODE STEPS INTERVAL [own-group]
# The trainer inherits the wrapper's stdout (the job's log) and its process group.
nohup "$1" launcher_train.py "$2" "$3" "$4" ${5:+"$5"} &
echo "launcher: started the trainer (pid $!), leaving"
exit 0
