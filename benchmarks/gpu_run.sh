#!/bin/bash
# One device call: GPU throughput (benchmarks/gpu.py) and the spatial slider-crank on the
# accelerator (benchmarks/gpu_spatial.py), results under $OUT.
#
# The device image has jax 0.11.2 (CUDA 13). The newest jax (0.12.0.1: jax, jaxlib,
# jax-cuda13-plugin, jax-cuda13-pjrt; 233 MB of wheels, 735 MB installed) is over the
# tool's 64 MiB per call, so it travels as an xz-compressed tar of the installed packages
# (163 MB) split in parts (.g12/partNN, one call each, copied to /tmp/w on the warm
# machine). This script reassembles and unpacks them when /tmp/w holds the parts, else
# runs the image's jax (and says so). Set JAXMBS_GIT to the commit: the copy there can carry
# the .git of an older commit (2026-11-29: it read 418082f under 7424273's files).
# Usage on the device machine: bash benchmarks/gpu_run.sh
set -x
export PYTHONUNBUFFERED=1
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
if ls /tmp/w/part0* >/dev/null 2>&1; then
    cat /tmp/w/part0* > /tmp/g12.tar.xz && md5sum /tmp/g12.tar.xz
    mkdir -p /tmp/site_jax
    python3 -c "import lzma, tarfile; tarfile.open(fileobj=lzma.open('/tmp/g12.tar.xz')).extractall('/tmp/site_jax')"
    if PYTHONPATH=/tmp/site_jax python3 -c "import jax; assert jax.devices()[0].platform == 'gpu', jax.devices(); print(jax.__version__, jax.devices())"; then
        export PYTHONPATH=/tmp/site_jax
    else
        echo "jax 0.12 did not start on the GPU: running the image's jax"; unset PYTHONPATH
    fi
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
python3 -c "import jax, numpy; print('jax', jax.__version__, jax.devices(), 'numpy', numpy.__version__)"
G="python3 benchmarks/gpu.py --out $O/gpu.json"
timeout 100 $G --cases double_pendulum --batches 65536 262144 1048576 --dtypes float32 --budget 80
timeout 60 $G --append --cases double_pendulum --batches 65536 262144 --dtypes float64 --budget 40
timeout 110 $G --append --cases slider_crank --batches 262144 --dtypes float32 float64 --budget 90
timeout 70 $G --append --cases chain8 --batches 65536 --dtypes float64 --budget 50
timeout 70 $G --append --cases chain32 --batches 16384 --dtypes float64 --budget 50
timeout 150 python3 benchmarks/gpu_spatial.py --batches 65536 --steps 200 --out $O/gpu_spatial.json
ls -la $O
