"""deploy/kubernetes: every manifest is valid Kubernetes (the API's own schemas, bundled by
kubernetes-validate: no cluster, no network), has the shape docs/scaling.md describes, and
gives every process the environment it needs: what docker-compose.yml gives the same
process, and nothing the code does not read or the README does not document."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy" / "kubernetes"
KUSTOMIZATION = "kustomization.yaml"
SECRET_EXAMPLE = "secret.example.yaml"  # the keys of the Secret, never applied from here

# Without these a production process runs on the wrong database, no broker or no shared
# cache (each has a development default), refuses to start (SECRET_KEY), refuses every
# request (ALLOWED_HOSTS) or sends links to 127.0.0.1 (SITE_URL).
REQUIRED = {
    "DJANGO_SETTINGS_MODULE",
    "SECRET_KEY",
    "DATABASE_URL",
    "REDIS_URL",
    "CELERY_BROKER_URL",
    "ALLOWED_HOSTS",
    "SITE_URL",
}
# docker-compose.yml's services and the workloads that run the same processes.
COMPOSE_TO_KUBERNETES = {
    "migrate": ("Job", "reseller-migrate"),
    "web": ("Deployment", "reseller-web"),
    "worker": ("Deployment", "reseller-worker"),
    "webhooks": ("Deployment", "reseller-webhooks"),
    "beat": ("Deployment", "reseller-beat"),
}


def manifest_files() -> list[Path]:
    return sorted(p for p in DEPLOY.glob("*.yaml") if p.name != KUSTOMIZATION)


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def resources() -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in manifest_files():
        for doc in documents(path):
            found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    return workload["spec"]["template"]["spec"]


def workloads() -> dict[str, dict[str, Any]]:
    return {name: doc for (kind, name), doc in resources().items() if kind in {"Deployment", "Job"}}


def env_names_read_by_the_code() -> set[str]:
    """Every variable the settings (reseller/env.py's ``env``), gunicorn.conf.py and the
    metrics read, by name."""
    sources = [
        *(ROOT / "reseller").rglob("*.py"),
        *(ROOT / "metrics").rglob("*.py"),
        ROOT / "gunicorn.conf.py",
    ]
    pattern = re.compile(
        r"""(?:\benv(?:\.\w+)?\(\s*|os\.environ\.get\(\s*|os\.environ\.setdefault\(\s*)"""
        r"""["']([A-Z][A-Z0-9_]+)["']"""
    )
    return {name for path in sources for name in pattern.findall(path.read_text())}


def provided(workload: dict[str, Any], container: dict[str, Any]) -> set[str]:
    """The variables a container gets: its env, and its envFrom ConfigMaps and Secrets."""
    every = resources()
    names = {item["name"] for item in container.get("env", [])}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            names |= set(every[("ConfigMap", source["configMapRef"]["name"])]["data"])
        if "secretRef" in source:
            names |= set(every[("Secret", source["secretRef"]["name"])]["stringData"])
    return names


def containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod_spec(workload)
    return [*spec.get("initContainers", []), *spec["containers"]]


@pytest.mark.parametrize("path", manifest_files(), ids=lambda p: p.name)
def test_every_manifest_is_valid_for_the_kubernetes_api(path):
    """Strict: a misspelt or misplaced field is an error, as `kubectl apply` would find."""
    version = kubernetes_validate.latest_version()
    for doc in documents(path):
        kubernetes_validate.validate(doc, version, strict=True)


def test_the_kustomization_applies_every_manifest_but_the_secret_example():
    kustomization = yaml.safe_load((DEPLOY / KUSTOMIZATION).read_text())
    expected = {p.name for p in manifest_files()} - {SECRET_EXAMPLE}
    assert set(kustomization["resources"]) == expected
    images = {image["name"] for image in kustomization["images"]}
    for workload in workloads().values():
        for container in containers(workload):
            assert container["image"] in images, container["name"]


def test_the_shape_is_web_worker_webhooks_beat_and_a_migrate_job():
    every = resources()
    web = every[("Deployment", "reseller-web")]
    worker = every[("Deployment", "reseller-worker")]
    webhooks = every[("Deployment", "reseller-webhooks")]
    beat = every[("Deployment", "reseller-beat")]
    migrate = every[("Job", "reseller-migrate")]

    for deployment in (web, worker, webhooks, beat):
        selector = deployment["spec"]["selector"]["matchLabels"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items(), deployment["metadata"]["name"]
    # Several hosts: two web and two worker pods, spread over nodes.
    for deployment in (web, worker):
        assert deployment["spec"]["replicas"] >= 2
        spread = pod_spec(deployment)["topologySpreadConstraints"]
        assert spread[0]["topologyKey"] == "kubernetes.io/hostname"
    # Beat runs once: one replica, the old pod gone before the new one starts.
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    assert pod_spec(beat)["containers"][0]["command"][:4] == ["celery", "-A", "reseller", "beat"]

    def queues(deployment) -> str:
        command = pod_spec(deployment)["containers"][0]["command"]
        return command[command.index("-Q") + 1]

    assert queues(worker) == "celery"
    assert queues(webhooks) == "celery-webhooks"
    assert "migrate" in pod_spec(migrate)["containers"][0]["command"]
    assert pod_spec(migrate)["restartPolicy"] in {"OnFailure", "Never"}
    # The other workloads wait for the release's migrations.
    for deployment in (web, worker, webhooks, beat):
        init = pod_spec(deployment)["initContainers"]
        assert "migrate --check" in " ".join(init[0]["command"]), deployment["metadata"]["name"]

    # The Service reaches the web pods' named port.
    service = every[("Service", "reseller-web")]
    web_labels = web["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= web_labels.items()
    ports = {p["name"] for p in pod_spec(web)["containers"][0]["ports"]}
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= ports


def test_web_is_probed_on_healthz_with_a_host_it_allows():
    every = resources()
    container = pod_spec(every[("Deployment", "reseller-web")])["containers"][0]
    allowed = every[("ConfigMap", "reseller-config")]["data"]["ALLOWED_HOSTS"].split(",")
    for probe in ("readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["path"] == "/healthz"
        assert get["port"] in {p["name"] for p in container["ports"]}
        # Django answers 400 to a Host it does not allow; the kubelet sends the pod's IP.
        hosts = [h["value"] for h in get["httpHeaders"] if h["name"] == "Host"]
        assert hosts and hosts[0] in allowed, probe
    for name in ("reseller-worker", "reseller-webhooks"):
        probe = pod_spec(every[("Deployment", name)])["containers"][0]["livenessProbe"]
        assert "inspect ping" in " ".join(probe["exec"]["command"])


def test_every_container_has_resources_and_runs_unprivileged():
    for name, workload in workloads().items():
        spec = pod_spec(workload)
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        for container in containers(workload):
            where = f"{name}/{container['name']}"
            resources_ = container["resources"]
            assert {"cpu", "memory"} <= set(resources_["requests"]), where
            assert "memory" in resources_["limits"], where
            assert container["securityContext"]["allowPrivilegeEscalation"] is False, where
            # A read-only root: whatever a process writes goes to a mounted emptyDir.
            assert container["securityContext"]["readOnlyRootFilesystem"] is True, where
            assert "/tmp" in {m["mountPath"] for m in container["volumeMounts"]}, where


def test_every_process_gets_the_variables_production_needs():
    for name, workload in workloads().items():
        for container in containers(workload):
            missing = REQUIRED - provided(workload, container)
            assert not missing, f"{name}/{container['name']} lacks {sorted(missing)}"


def test_every_process_gets_what_docker_compose_gives_it():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    every = resources()
    for service, key in COMPOSE_TO_KUBERNETES.items():
        expected = set(compose["services"][service]["environment"])
        container = pod_spec(every[key])["containers"][0]
        missing = expected - provided(every[key], container)
        assert not missing, f"{key[1]} lacks {sorted(missing)} (compose's {service} has them)"


def test_every_variable_the_manifests_set_is_read_by_the_code_and_documented():
    read = env_names_read_by_the_code()
    assert {"SECRET_KEY", "DATABASE_URL", "GUNICORN_LIMIT_REQUEST_LINE"} <= read  # the scan works
    readme = (ROOT / "README.md").read_text()
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", readme))
    for name, workload in workloads().items():
        for container in containers(workload):
            names = provided(workload, container)
            assert names <= read, f"{name}: nothing reads {sorted(names - read)}"
            undocumented = names - documented - {"DJANGO_SETTINGS_MODULE"}
            assert not undocumented, f"{name}: the README does not list {sorted(undocumented)}"
