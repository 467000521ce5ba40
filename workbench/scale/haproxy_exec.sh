#!/bin/sh
# Ray Serve's HAProxy binary for WORKBENCH_RAY__INGRESS=haproxy (RAY_SERVE_HAPROXY_BINARY_PATH names this file):
# adds Workbench's request rules to the configuration Ray generated (run ids, retries of lost predictions, 503
# answers), then becomes the real HAProxy with the same arguments and process id. workbench/scale/haproxy.py.
exec "${WORKBENCH_HAPROXY_PYTHON:-python3}" -m workbench.scale.haproxy "$@"
