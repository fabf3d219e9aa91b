"""deploy/kubernetes, checked offline (issue 49): built as ``kubectl apply -k`` builds it
(the kustomizations use resources and images only, and this test refuses anything else),
every resource validated against the Kubernetes schemas kubernetes-validate ships (strict:
an unknown field is an error), and what matters read back through ctxstore's own code:
the parser runs every container's arguments, the settings model reads every variable,
and the serve options resolve as ``ctxstore serve`` resolves them."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

import ctxstore
from ctxstore.cli import build_parser
from ctxstore.cli import db as db_command
from ctxstore.cli.serve import given_settings
from ctxstore.cli.summarize import load_summarizer
from ctxstore.db.engine import EngineSettings
from ctxstore.errors import ConfigurationError
from ctxstore.http.auth import TokenRegistry
from ctxstore.http.server import ServeOptions
from ctxstore.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "deploy" / "kubernetes"
MIGRATE = BASE / "migrate"
SECRETS = BASE / "secret.yaml"
#: The oldest Kubernetes the manifests are for; the newest kubernetes-validate ships too.
OLDEST_KUBERNETES = "1.30"
#: What a kustomization here may say: exactly what build() does, as kustomize does it.
KUSTOMIZATION_FIELDS = {"apiVersion", "kind", "resources", "images"}
#: PostgreSQL's defaults: max_connections, superuser_reserved_connections.
MAX_CONNECTIONS, SUPERUSER_RESERVED = 100, 3
#: Connections left for people and tools (psql, a metrics exporter, a backup).
OTHER_CLIENTS = 5

VARIABLE_FIELDS = {
    str(field.validation_alias): name for name, field in Settings.model_fields.items()
}


# -- building the kustomizations -------------------------------------------------------------


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def _kustomization(directory: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((directory / "kustomization.yaml").read_text())
    return loaded


def _containers(documents: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for document in documents:
        pod = document.get("spec", {}).get("template", {}).get("spec", {})
        yield from pod.get("initContainers", [])
        yield from pod.get("containers", [])


def _retagged(image: str, rule: dict[str, str]) -> str:
    """kustomize's images transformer: a container image named ``rule["name"]`` gets
    the rule's newName and newTag."""
    name, _, tag = image.partition(":")
    if name != rule["name"]:
        return image
    return f"{rule.get('newName', name)}:{rule.get('newTag', tag)}"


def build(directory: Path) -> list[dict[str, Any]]:
    """What ``kubectl kustomize DIRECTORY`` prints, as documents."""
    kustomization = _kustomization(directory)
    unknown = set(kustomization) - KUSTOMIZATION_FIELDS
    assert not unknown, f"{directory}: this test builds no {sorted(unknown)}: add it here"
    documents = [
        doc for entry in kustomization["resources"] for doc in _documents(directory / entry)
    ]
    for rule in kustomization.get("images", []):
        for container in _containers(documents):
            container["image"] = _retagged(container["image"], rule)
    return documents


ROLLOUT = build(BASE)
MIGRATION = build(MIGRATE)
SECRET_DOCUMENTS = _documents(SECRETS)
EVERYTHING = ROLLOUT + MIGRATION + SECRET_DOCUMENTS


def _one(kind: str, name: str) -> dict[str, Any]:
    (found,) = [d for d in EVERYTHING if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def _pod(workload: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = workload["spec"]["template"]["spec"]
    return pod


def _workloads() -> list[dict[str, Any]]:
    return [d for d in EVERYTHING if d["kind"] in ("Deployment", "Job")]


HTTP = _one("Deployment", "ctxstore-http")
WORKER = _one("Deployment", "ctxstore-summarize-worker")
JOB = _one("Job", "ctxstore-migrate")
(HTTP_CONTAINER,) = _pod(HTTP)["containers"]
(WORKER_CONTAINER,) = _pod(WORKER)["containers"]
(JOB_CONTAINER,) = _pod(JOB)["containers"]


def environment(container: dict[str, Any]) -> dict[str, str]:
    """The variables the container starts with, its ConfigMaps' and Secrets' values read."""
    found: dict[str, str] = {}
    for source in container.get("envFrom", []):
        found |= _one("ConfigMap", source["configMapRef"]["name"])["data"]
    for variable in container.get("env", []):
        if "value" in variable:
            found[variable["name"]] = variable["value"]
        else:
            reference = variable["valueFrom"]["secretKeyRef"]
            secret = _one("Secret", reference["name"])
            found[variable["name"]] = secret["stringData"][reference["key"]]
    return found


def settings_of(container: dict[str, Any]) -> Settings:
    """The settings the container's ctxstore loads (ConfigurationError for a bad value)."""
    variables = environment(container)
    return Settings().replaced({VARIABLE_FIELDS[name]: text for name, text in variables.items()})


def serve_of(container: dict[str, Any]) -> tuple[ServeOptions, Settings]:
    """What `ctxstore serve` resolves in the container: options, else variables."""
    given = given_settings(build_parser().parse_args(container["args"]))
    settings = settings_of(container)
    return ServeOptions.resolve(settings, given), settings.replaced(given)


# -- the schemas -----------------------------------------------------------------------------


def _versions() -> list[str]:
    newest = kubernetes_validate.latest_version()
    shipped = [v.rsplit(".", 1)[0] for v in kubernetes_validate.utils.all_versions()]
    assert OLDEST_KUBERNETES in shipped, (
        f"kubernetes-validate {kubernetes_validate.__version__} no longer ships "
        f"Kubernetes {OLDEST_KUBERNETES}'s schemas: raise OLDEST_KUBERNETES and the docs"
    )
    return [OLDEST_KUBERNETES, newest]


def _schema_name(document: dict[str, Any]) -> str:
    return f"{document['kind']}/{document['metadata']['name']}"


def test_every_resource_is_valid_against_the_kubernetes_schemas() -> None:
    kinds = {document["kind"] for document in EVERYTHING}
    assert kinds == {
        "ServiceAccount",
        "Secret",
        "ConfigMap",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "Job",
    }
    for version in _versions():
        for document in EVERYTHING:
            try:
                kubernetes_validate.validate(document, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                path = ".".join(str(part) for part in error.path)
                pytest.fail(f"{_schema_name(document)} on {version}: {path}: {error.message}")


@pytest.mark.parametrize(
    ("where", "field", "value"),
    [
        ("container", "livenessprobe", {"httpGet": {"path": "/healthz", "port": 8080}}),
        ("container", "resources", {"request": {"cpu": "1"}}),
        ("spec", "replicas", "two"),
    ],
    ids=["unknown field", "misspelt nested field", "wrong type"],
)
def test_the_validation_would_catch_a_mistake(where: str, field: str, value: object) -> None:
    """The check above is strict: these edits of the service's Deployment fail it."""
    broken = copy.deepcopy(HTTP)
    target = _pod(broken)["containers"][0] if where == "container" else broken["spec"]
    target[field] = value
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, OLDEST_KUBERNETES, strict=True)


def test_every_container_runs_the_one_image_both_kustomizations_name() -> None:
    (rule,) = _kustomization(BASE)["images"]
    assert _kustomization(MIGRATE)["images"] == [rule]  # a release migrates with its code
    image = f"{rule['newName']}:{rule['newTag']}"
    assert {c["image"] for c in _containers(ROLLOUT + MIGRATION)} == {image}
    assert rule["newTag"] == ctxstore.__version__  # the base names the release it ships with


def test_the_secrets_stay_out_of_the_kustomizations_and_are_placeholders() -> None:
    """`kubectl apply -k` never writes the placeholders over real credentials, and each
    placeholder fails loudly rather than half-working."""
    listed = [entry for d in (BASE, MIGRATE) for entry in _kustomization(d)["resources"]]
    assert not any(Path(entry).name == SECRETS.name for entry in listed)
    assert {d["kind"] for d in ROLLOUT + MIGRATION}.isdisjoint({"Secret"})
    values = [v for secret in SECRET_DOCUMENTS for v in secret["stringData"].values()]
    assert values and all("REPLACE-ME" in value for value in values)
    app = _one("Secret", "ctxstore-app")["stringData"]
    with pytest.raises(ConfigurationError, match="CTXSTORE_HTTP_TOKENS"):
        TokenRegistry.from_settings(Settings(http_tokens=app["CTXSTORE_HTTP_TOKENS"]))
    for url in (
        app["CTXSTORE_DATABASE_URL"],
        _one("Secret", "ctxstore-migration")["stringData"]["CTXSTORE_MIGRATION_DATABASE_URL"],
    ):
        assert re.search(r"@[^/:]+\.invalid:", url), url  # a host that never resolves


# -- what ctxstore makes of them -------------------------------------------------------------


def test_every_variable_is_a_ctxstore_setting_with_a_valid_value() -> None:
    set_anywhere = set()
    for container in _containers(EVERYTHING):
        variables = environment(container)
        assert set(variables) <= set(VARIABLE_FIELDS), sorted(set(variables) - set(VARIABLE_FIELDS))
        settings_of(container)  # a bad value is a ConfigurationError naming it
        set_anywhere |= set(variables)
    for document in EVERYTHING:
        if document["kind"] in ("ConfigMap", "Secret"):
            keys = set(document.get("data", {})) | set(document.get("stringData", {}))
            assert keys <= set(VARIABLE_FIELDS), (_schema_name(document), keys)
            assert keys <= set_anywhere, f"{_schema_name(document)}: a key no pod reads"


def test_every_container_runs_a_ctxstore_command_its_parser_accepts() -> None:
    containerfile = (ROOT / "Containerfile").read_text(encoding="utf-8")
    assert 'ENTRYPOINT ["ctxstore"]' in containerfile
    for container in _containers(EVERYTHING):
        assert "command" not in container, "the image's ENTRYPOINT, ctxstore, runs the args"
        try:
            args = build_parser().parse_args(container["args"])
        except SystemExit:
            pytest.fail(f"ctxstore refuses {container['name']}'s args {container['args']}")
        assert callable(args.func)


def test_the_service_listens_where_the_probes_and_the_service_look() -> None:
    options, _ = serve_of(HTTP_CONTAINER)
    assert (options.host, options.port) == ("0.0.0.0", 8080)
    ports = {port["name"]: port["containerPort"] for port in HTTP_CONTAINER["ports"]}
    assert ports == {"http": options.port}
    routes = json.loads((ROOT / "docs" / "openapi.json").read_text(encoding="utf-8"))["paths"]
    probes = {}
    for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
        probe = HTTP_CONTAINER[kind]["httpGet"]
        assert ports.get(probe["port"], probe["port"]) == options.port, kind
        assert "scheme" not in probe or probe["scheme"] == "HTTP"  # no TLS in the base
        assert probe["path"] in routes, f"{kind}: {probe['path']} is no route of the service"
        probes[kind] = probe["path"]
    # Liveness never touches the database (a PostgreSQL outage restarts nothing);
    # readiness does, and checks the schema.
    assert probes == {
        "startupProbe": "/healthz",
        "livenessProbe": "/healthz",
        "readinessProbe": "/readyz",
    }
    (service_port,) = _one("Service", "ctxstore-http")["spec"]["ports"]
    assert ports.get(service_port["targetPort"], service_port["targetPort"]) == options.port


def _pre_stop_seconds(container: dict[str, Any]) -> int:
    hook = container["lifecycle"]["preStop"]
    if "sleep" in hook:
        return int(hook["sleep"]["seconds"])
    command = hook["exec"]["command"]
    assert command[0] == "sleep" and len(command) == 2, command
    return int(command[1])


def test_a_pod_finishes_its_requests_before_kubernetes_kills_it() -> None:
    options, _ = serve_of(HTTP_CONTAINER)
    assert options.graceful_timeout == 30  # the option in args, parsed as ctxstore does
    sleep = _pre_stop_seconds(HTTP_CONTAINER)
    assert sleep >= 1  # endpoints are removed while the pod still serves
    grace = _pod(HTTP)["terminationGracePeriodSeconds"]
    assert grace > sleep + options.graceful_timeout, (grace, sleep, options.graceful_timeout)
    strategy = HTTP["spec"]["strategy"]["rollingUpdate"]
    assert strategy["maxUnavailable"] == 0  # a new pod first, ready, then an old one goes


def _image_uid() -> int:
    users = re.findall(r"^USER (\d+)$", (ROOT / "Containerfile").read_text(), re.M)
    return int(users[-1])


@pytest.mark.parametrize("workload", _workloads(), ids=lambda w: w["metadata"]["name"])
def test_every_pod_runs_unprivileged_as_the_images_user(workload: dict[str, Any]) -> None:
    pod = _pod(workload)
    assert pod["automountServiceAccountToken"] is False
    context = pod["securityContext"]
    assert context["runAsNonRoot"] is True and context["runAsUser"] == _image_uid() == 10001
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    volumes = {volume["name"]: volume for volume in pod.get("volumes", [])}
    for container in pod["containers"]:
        own = container["securityContext"]
        assert own["allowPrivilegeEscalation"] is False
        assert own["capabilities"] == {"drop": ["ALL"]}
        assert own["readOnlyRootFilesystem"] is True
        assert own.get("runAsUser", context["runAsUser"]) == _image_uid()
        # The one writable place: the metrics directory of several workers, tempfiles.
        (tmp,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
        assert "emptyDir" in volumes[tmp["name"]]
        resources = container["resources"]
        assert {"cpu", "memory"} <= set(resources["requests"])
        assert "memory" in resources["limits"]


def test_the_service_and_the_budget_select_the_service_pods_only() -> None:
    labels = HTTP["spec"]["template"]["metadata"]["labels"]
    worker_labels = WORKER["spec"]["template"]["metadata"]["labels"]
    job_labels = JOB["spec"]["template"]["metadata"]["labels"]
    selectors = {
        "Deployment": HTTP["spec"]["selector"]["matchLabels"],
        "Service": _one("Service", "ctxstore-http")["spec"]["selector"],
        "PodDisruptionBudget": _one("PodDisruptionBudget", "ctxstore-http")["spec"]["selector"][
            "matchLabels"
        ],
    }
    for kind, selector in selectors.items():
        assert selector.items() <= labels.items(), kind
        assert not selector.items() <= worker_labels.items(), kind
        assert not selector.items() <= job_labels.items(), kind
    assert WORKER["spec"]["selector"]["matchLabels"].items() <= worker_labels.items()
    budget = _one("PodDisruptionBudget", "ctxstore-http")["spec"]
    replicas = HTTP["spec"]["replicas"]
    # A drain evicts one pod at a time, and can evict at all.
    assert budget.get("maxUnavailable", replicas - budget.get("minAvailable", 0)) == 1 < replicas


def test_each_pod_gets_only_the_secrets_it_uses() -> None:
    def secrets(container: dict[str, Any]) -> set[tuple[str, str]]:
        return {
            (v["valueFrom"]["secretKeyRef"]["name"], v["name"])
            for v in container.get("env", [])
            if "valueFrom" in v
        }

    assert secrets(HTTP_CONTAINER) == {
        ("ctxstore-app", "CTXSTORE_DATABASE_URL"),
        ("ctxstore-app", "CTXSTORE_HTTP_TOKENS"),
    }
    assert secrets(WORKER_CONTAINER) == {("ctxstore-app", "CTXSTORE_DATABASE_URL")}
    assert secrets(JOB_CONTAINER) == {("ctxstore-migration", "CTXSTORE_MIGRATION_DATABASE_URL")}
    assert all("secretRef" not in s for c in _containers(EVERYTHING) for s in c.get("envFrom", []))


def test_the_migration_job_upgrades_over_the_migration_url_and_stays_apart() -> None:
    args = build_parser().parse_args(JOB_CONTAINER["args"])
    assert JOB_CONTAINER["args"][:2] == ["db", "upgrade"] and args.func is db_command.upgrade
    settings = settings_of(JOB_CONTAINER)
    assert settings.database_url is None  # the owner's direct URL only
    assert settings.database_url_for(migrating=True) == settings.migration_database_url
    spec = JOB["spec"]
    assert _pod(JOB)["restartPolicy"] == "Never"
    assert 0 < spec["backoffLimit"] <= 5
    assert spec["activeDeadlineSeconds"] > 0 and spec["ttlSecondsAfterFinished"] > 0
    # Not part of the rollout: it runs, and is waited for, before it.
    assert "Job" not in {document["kind"] for document in ROLLOUT}


def test_the_summary_worker_runs_a_summarizer_ctxstore_loads() -> None:
    args = build_parser().parse_args(WORKER_CONTAINER["args"])
    assert WORKER_CONTAINER["args"][0] == "summarize-worker"
    assert not (args.status or args.requeue_dead)
    assert callable(load_summarizer(args.summarizer))
    assert settings_of(WORKER_CONTAINER).database_url == settings_of(HTTP_CONTAINER).database_url
    # Stopping, it lets its jobs in flight finish; old and new never overlap.
    assert _pod(WORKER)["terminationGracePeriodSeconds"] >= 60
    assert WORKER["spec"]["strategy"] == {"type": "Recreate"}


# -- connections -----------------------------------------------------------------------------


def connection_budget() -> dict[str, int]:
    """The most connections this base opens at once, as docs/production.md counts them:
    in a rollout, the replicas, the surge pod and one pod draining, each with workers x
    pool; every summary worker's pool; the migration's one session."""
    _, settings = serve_of(HTTP_CONTAINER)
    replicas = HTTP["spec"]["replicas"]
    surge = HTTP["spec"]["strategy"]["rollingUpdate"]["maxSurge"]
    per_pod = settings.http_workers * settings.http_pool_size
    service = (replicas + surge + 1) * per_pod
    workers = WORKER["spec"]["replicas"] * EngineSettings().pool_size
    total = service + workers + 1
    return {
        "replicas": replicas,
        "workers": settings.http_workers,
        "pool": settings.http_pool_size,
        "per_pod": per_pod,
        "service": service,
        "summary": workers,
        "total": total,
        "needed": total + SUPERUSER_RESERVED + OTHER_CLIENTS,
    }


def test_the_base_fits_postgresqls_default_max_connections_as_the_docs_say() -> None:
    budget = connection_budget()
    assert budget["needed"] <= MAX_CONNECTIONS
    row = (
        f"| this base | {budget['replicas']} | {budget['workers']} | {budget['pool']} | "
        f"{budget['per_pod']} | {budget['service']} | {budget['summary']} | 1 | "
        f"{budget['total']} | {budget['needed']} |"
    )
    production = (ROOT / "docs" / "production.md").read_text(encoding="utf-8")
    assert row in production, f"docs/production.md's sizing table lacks {row}"
