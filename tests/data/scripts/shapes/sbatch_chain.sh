#!/bin/bash
# The sc21 shape: settings, a sourced config that builds the parameters, and `sbatch` of the job script.
PP=2
NNODES=${PP}
MBS=1
export JOB_NAME=chain_pp${PP}
. `pwd`/conf/chain_config.sh
sbatch -p batch --nodes=${NNODES} --export=ALL conf/chain_job.sh
exit 0
