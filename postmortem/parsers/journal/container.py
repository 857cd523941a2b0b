"""Container output captured by the journal: whose unit a container's line is.

Docker's ``journald`` log driver writes each line a container prints as a journal entry of its
own, sent by ``dockerd``: journald stamps it ``_SYSTEMD_UNIT=docker.service``, ``_COMM=dockerd``
and dockerd's ``_PID``, and the driver adds ``CONTAINER_ID`` (12 hex digits),
``CONTAINER_ID_FULL`` (64), ``CONTAINER_NAME`` (the name when it was started),
``CONTAINER_TAG`` and ``SYSLOG_IDENTIFIER`` (the ``--log-opt tag``, by default the short id),
``IMAGE_NAME``, and ``PRIORITY`` 6 for stdout, 3 for stderr. Podman's ``conmon`` writes the same
``CONTAINER_*`` fields. Such a line belongs to the container, not to the daemon that relayed it:
its unit is the container's, named ``<runtime>:<container name>`` (``docker:llm-qwen``), and
its ``_PID`` (the daemon's) is no process of the container. Under a systemd service (a podman
Quadlet, ``podman run`` in ``ExecStart=``) conmon runs in that service's cgroup: the service is
the unit, as systemd restarts it.

>>> ref = container_of({"_COMM": "dockerd", "_SYSTEMD_UNIT": "docker.service",
...                     "CONTAINER_ID_FULL": "3f2a" + "0" * 60, "CONTAINER_NAME": "llm-qwen",
...                     "IMAGE_NAME": "registry.example/llm-server:1.4"})
>>> ref.unit, ref.runtime, ref.container_id[:12], ref.image
('docker:llm-qwen', 'docker', '3f2a00000000', 'registry.example/llm-server:1.4')
>>> container_of({"_COMM": "conmon", "_SYSTEMD_UNIT": "llm.service",
...               "CONTAINER_ID_FULL": "ab" * 32, "CONTAINER_NAME": "llm"}) is None
True
>>> container_of({"_COMM": "python3", "_SYSTEMD_UNIT": "llm.service"}) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass

#: the process that relays a container's output to the journal → the container runtime
WRITERS = {"dockerd": "docker", "conmon": "podman"}
#: units a container runtime's daemon runs as (when a copy lacks ``_COMM``)
DAEMON_UNITS = {"docker.service": "docker", "snap.docker.dockerd.service": "docker"}
#: the prefixes of container units (``docker:<name>``; a Kubernetes pod's ``k8s:<ns>/<pod>/<container>``)
UNIT_PREFIXES = (*(f"{r}:" for r in sorted(set(WRITERS.values()))), "k8s:")


@dataclass(frozen=True, slots=True)
class ContainerRef:
    """A container as one of its journal lines names it."""

    runtime: str
    container_id: str
    name: str
    image: str | None

    @property
    def unit(self) -> str:
        return f"{self.runtime}:{self.name}"


def container_of(fields: dict[str, str]) -> ContainerRef | None:
    """The container whose output this entry is, or None (not a container's line, or one that
    belongs to the systemd service the runtime runs under)."""
    cid = fields.get("CONTAINER_ID_FULL") or fields.get("CONTAINER_ID")
    if not cid:
        return None
    unit = fields.get("_SYSTEMD_UNIT")
    runtime = WRITERS.get(fields.get("_COMM") or "") or DAEMON_UNITS.get(unit or "")
    if runtime is None:
        return None
    if runtime != "docker" and unit is not None and unit.endswith(".service"):
        return None  # conmon in a service's cgroup: the service is what systemd restarts
    name = (fields.get("CONTAINER_NAME") or "").lstrip("/") or cid[:12]
    return ContainerRef(runtime, cid, name, fields.get("IMAGE_NAME") or None)


def is_container_unit(unit: str | None) -> bool:
    """Whether ``unit`` names a container (``docker:<name>``) rather than a systemd unit.

    >>> is_container_unit("docker:llm-qwen"), is_container_unit("llm.service"), is_container_unit(None)
    (True, False, False)
    """
    return unit is not None and unit.startswith(UNIT_PREFIXES)
