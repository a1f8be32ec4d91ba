# The workspace image the Pulumi Kubernetes Operator runs this program in (docs/always-on.md).
#
# The program and all of its dependencies are baked in. The operator runs `pulumi install` whenever a
# workspace pod starts; for a Python program in its default nonroot image that install is known to
# fail, and to start over on every pod restart (pulumi/pulumi-kubernetes-operator#1302, #965). Here it
# finds the virtualenv and the provider plugins in place. The Stack that `modelplane control-plane
# --render` writes points `workspaceTemplate.spec.local.dir` at the WORKDIR below, and the operator's
# restricted profile runs the pod as uid 1000, which owns it.
#
#   docker build -t registry.example/modelplane-workspace:0.1.0 .
#   docker push registry.example/modelplane-workspace:0.1.0
ARG PULUMI_VERSION=3.272.0
FROM pulumi/pulumi-python-3.12:${PULUMI_VERSION}

RUN groupadd --gid 1000 pulumi && useradd --uid 1000 --gid 1000 --create-home --home-dir /home/pulumi pulumi
USER 1000:1000
ENV HOME=/home/pulumi
WORKDIR /home/pulumi/modelplane

COPY --chown=1000:1000 requirements.txt pyproject.toml README.md ./
COPY --chown=1000:1000 modelplane ./modelplane
RUN python -m venv .venv \
    && .venv/bin/pip install --no-cache-dir --disable-pip-version-check -r requirements.txt \
    && .venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-deps .
COPY --chown=1000:1000 Pulumi.yaml __main__.py ./
COPY --chown=1000:1000 stacks ./stacks
# The provider plugins the program's packages name (kubernetes, gcp, aws, azure-native, nebius, vultr).
RUN pulumi install
