#!/bin/bash
# The GPU benchmarks in one go (about 10 minutes on one NVIDIA H200): throughput of the planar
# cases (benchmarks/gpu.py -> results/gpu.json) and the spatial slider-crank
# (benchmarks/gpu_spatial.py -> results/gpu_spatial.json); results under $OUT when set.
#
# Usage, from the repository root on a machine with a CUDA jax (jax >= 0.12):
#     bash benchmarks/gpu_run.sh
#
# Optional: a machine whose image has an older jax can be given the newer one as an
# xz-compressed tar of the installed packages split in parts /tmp/w/part00, part01, ...;
# the script then unpacks it and puts it first on PYTHONPATH (and falls back to the
# image's jax if that does not start on the GPU). JAXMBS_GIT, when set, is recorded as the
# commit measured (for copies of the checkout without a usable .git).
set -x
export PYTHONUNBUFFERED=1
O=${OUT:-benchmarks/results}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
if ls /tmp/w/part0* >/dev/null 2>&1; then
    cat /tmp/w/part0* > /tmp/g12.tar.xz && md5sum /tmp/g12.tar.xz
    mkdir -p /tmp/site_jax
    python3 -c "import lzma, tarfile; tarfile.open(fileobj=lzma.open('/tmp/g12.tar.xz')).extractall('/tmp/site_jax')"
    if PYTHONPATH=/tmp/site_jax python3 -c "import jax; assert jax.devices()[0].platform == 'gpu', jax.devices(); print(jax.__version__, jax.devices())"; then
        export PYTHONPATH=/tmp/site_jax
    else
        echo "the unpacked jax did not start on the GPU: running the image's jax"; unset PYTHONPATH
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
