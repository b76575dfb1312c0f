#!/bin/bash
#SBATCH --ntasks-per-node=8 --nodes=1
CMD="python -u ${CODE_DIR}/pretrain_gpt.py ${PARAMS}"
srun -l --output=log_%j.txt sh -c "${CMD}"
