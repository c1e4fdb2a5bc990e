#!/bin/bash
# One device call: GPU throughput (benchmarks/gpu.py) and the spatial slider-crank against
# MuJoCo (benchmarks/spatial.py), results under $OUT.
#
# The device image has jax 0.11.2 (CUDA 13). The newest jax (0.12.0.1: jax, jaxlib,
# jax-cuda13-plugin, jax-cuda13-pjrt, 233 MB of wheels) is over the tool's 64 MiB per call,
# so it travels as a tar split in parts (.g12/partNN, one call each, copied to /tmp/w on the
# warm machine); with the MuJoCo wheels (.whl) in the same tar. This script reassembles and
# installs them when /tmp/w holds the parts, else runs the image's jax (and says so).
# Usage on the device machine: bash benchmarks/gpu_run.sh
set -x
export PYTHONUNBUFFERED=1
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
if ls /tmp/w/part0* >/dev/null 2>&1; then
    cat /tmp/w/part0* > /tmp/g12.tar && md5sum /tmp/g12.tar
    mkdir -p /tmp/g12 && tar xf /tmp/g12.tar -C /tmp/g12 && ls /tmp/g12
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site_mj /tmp/g12/mujoco*.whl /tmp/g12/glfw*.whl
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site_jax /tmp/g12/jax*.whl
    if PYTHONPATH=/tmp/site_jax python3 -c "import jax; assert jax.devices()[0].platform == 'gpu', jax.devices(); print(jax.__version__, jax.devices())"; then
        export PYTHONPATH=/tmp/site_jax:/tmp/site_mj
    else
        echo "jax 0.12 did not start on the GPU: running the image's jax"; export PYTHONPATH=/tmp/site_mj
    fi
fi
export PYTHONPATH=$PWD:$PYTHONPATH
python3 -c "import jax, numpy; print('jax', jax.__version__, jax.devices(), 'numpy', numpy.__version__)"
timeout 110 python3 benchmarks/gpu.py --cases double_pendulum --batches 65536 262144 \
    --dtypes float32 float64 --vectorize vmap elementwise --budget 100 --out $O/gpu.json
timeout 110 python3 benchmarks/gpu.py --append --cases slider_crank --batches 262144 \
    --dtypes float32 float64 --vectorize vmap --budget 100 --out $O/gpu.json
timeout 40 python3 benchmarks/gpu.py --append --cases chain8 --batches 65536 \
    --dtypes float64 --budget 30 --out $O/gpu.json
timeout 170 python3 benchmarks/spatial.py --batch 4096 --steps 400 && cp benchmarks/results/spatial.json $O/spatial.json
ls -la $O
