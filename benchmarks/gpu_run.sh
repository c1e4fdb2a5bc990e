#!/bin/bash
# One device call: GPU throughput sweep (benchmarks/gpu.py), results under $OUT.
# Usage on the device machine: bash benchmarks/gpu_run.sh
set -x
export PYTHONPATH=$PWD:$PYTHONPATH PYTHONUNBUFFERED=1
O=${OUT:-/tmp}/gpu.json
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 -c "import jax; print(jax.__version__, jax.devices())"
timeout 300 python3 benchmarks/gpu.py --cases double_pendulum --batches 4096 65536 262144 1048576 \
    --dtypes float32 float64 --budget 200 --out $O
timeout 200 python3 benchmarks/gpu.py --append --cases slider_crank fourbar --batches 65536 1048576 \
    --dtypes float32 float64 --budget 120 --out $O
timeout 120 python3 benchmarks/gpu.py --append --cases chain8 chain32 --batches 65536 \
    --dtypes float64 --budget 60 --out $O
cp $O benchmarks/results/gpu.json 2>/dev/null; ls -la ${OUT:-/tmp}
