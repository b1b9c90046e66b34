# kubesched's image: `docker build -t kubesched:0.1.0 .` from the repository root.
#
# Third-party plugins are Python packages; build them into the image with
#   docker build --build-arg PLUGINS="kubesched-my-filter==1.2.0" -t my-kubesched .
# (names pip understands, separated by spaces), or copy their wheels into deploy/plugins/.
# `kubesched plugins` in the container lists what it found.

ARG PYTHON=3.11
# The Python image both stages start from; deploy/build-offline-image.sh passes one made
# from Debian's packages where no container registry is reachable.
ARG BASE_IMAGE=python:${PYTHON}-slim

# -- build: wheels of kubesched, its dependencies and the plugins --------------------------
FROM ${BASE_IMAGE} AS build
ARG PLUGINS=""
WORKDIR /src
COPY pyproject.toml README.md ./
COPY core core
COPY builtin_plugins builtin_plugins
COPY contrib contrib
COPY plugin_template plugin_template
COPY deploy/plugins /plugins/
RUN pip wheel --no-cache-dir --wheel-dir /wheels . ${PLUGINS} \
    $(find /plugins -name "*.whl")

# -- run: only the installed packages, as a non-root user ----------------------------------
FROM ${BASE_IMAGE}
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels /wheels/*.whl \
    && rm -rf /wheels \
    && useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin kubesched
USER 65532:65532
# The HTTP server of /metrics, /healthz, /livez, /readyz.
EXPOSE 10259
ENTRYPOINT ["kubesched"]
CMD ["run", "--config", "/etc/kubesched/config.yaml", "--bind-address", "0.0.0.0"]
