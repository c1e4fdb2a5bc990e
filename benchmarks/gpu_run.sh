#!/bin/bash
# One device call: GPU throughput sweep (benchmarks/gpu.py), results under $OUT.
# Usage on the device machine: bash benchmarks/gpu_run.sh
set -x
export PYTHONPATH=$PWD:$PYTHONPATH PYTHONUNBUFFERED=1
O=${OUT:-/tmp}/gpu.json
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 -c "import jax; print(jax.__version__, jax.devices())"
timeout 270 python3 benchmarks/gpu.py --cases double_pendulum --batches 65536 262144 1048576 \
    --dtypes float32 float64 --vectorize vmap elementwise --budget 240 --out $O
timeout 150 python3 benchmarks/gpu.py --append --cases slider_crank --batches 262144 \
    --dtypes float32 float64 --vectorize vmap elementwise --budget 120 --out $O
timeout 60 python3 benchmarks/gpu.py --append --cases chain8 --batches 65536 \
    --dtypes float64 --budget 40 --out $O
ls -la ${OUT:-/tmp}
