"""A fleet of sandboxes (sbxfs-fleet): FLEET/ID/fs is a whole mount each. The lifecycle calls take
the hosted SDKs' names in Python naming (E2B's create, list, connect, kill; Cloudflare's
get_sandbox, destroy, set_keep_alive) and are file operations on the fleet's tree: mkdir, clone,
listdir, status, rmdir, keep_alive."""

import os
import shutil

from .errors import SandboxError, SandboxNotFoundError, ValidationError, map_error
from .names import check_name
from .session import Sandbox


def _status(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f.read().splitlines():
            key, sep, value = line.partition(" ")
            if sep:
                out[key] = value
    return out


def _info(id, st):
    return {"sandbox_id": id, "state": st["state"], "pid": int(st["pid"]),
            "restarts": int(st["restarts"]),
            "reason": None if st["reason"] == "-" else st["reason"]}


class FleetSandbox(Sandbox):
    """A sandbox of a fleet: a Sandbox on FLEET/ID/fs that knows its id and its fleet."""

    def __init__(self, fleet, id, workspace_path=None):
        super().__init__(os.path.join(fleet.root, id, "fs"), workspace_path=workspace_path)
        self.fleet = fleet
        self.sandbox_id = id

    def get_info(self):
        return self.fleet.get_info(self.sandbox_id)

    def set_keep_alive(self, on):
        self.fleet.set_keep_alive(self.sandbox_id, on)

    def get_config(self):
        return self.fleet.get_config(self.sandbox_id)

    def set_config(self, text):
        self.fleet.set_config(self.sandbox_id, text)

    def kill(self):
        self.fleet.kill(self.sandbox_id)

    destroy = kill


class Fleet:
    """The sandboxes of an sbxfs-fleet mounted at `root`."""

    def __init__(self, root):
        self.root = str(root)

    def _path(self, id, *rest):
        return os.path.join(self.root, check_name(id, "sandbox"), *rest)

    def create(self, id=None, workspace_path=None, config=None, template=None):
        """A new sandbox, up once this returns: `id`, or a fresh one from clone; with `config`
        (ini text), running with that config; with `template` (a path of this host's: a tar
        archive, plain or zstd, such as a snapshot's `archive`), its workspace restored from it.
        What is refused destroys the sandbox again. SandboxAlreadyExistsError,
        SandboxLimitError past the fleet's bound."""
        try:
            if id is None:
                with open(os.path.join(self.root, "clone"), encoding="utf-8") as f:
                    id = f.read().strip()
            else:
                os.mkdir(self._path(id))
            # A path into its fs/ waits for its daemon (EIO if it failed: its status says why).
            os.stat(self._path(id, "fs", "sessions"))
        except OSError as e:
            raise map_error(e, "sandbox", f"sandbox {id or '(new)'}") from None
        try:
            if config is not None:
                self.set_config(id, config)
            if template is not None:
                self._from_template(id, template)
        except SandboxError:
            try:
                self.kill(id)
            except SandboxError:
                pass
            raise
        return FleetSandbox(self, id, workspace_path)

    def _from_template(self, id, archive):
        """The archive imported as the snapshot `template` (all or nothing), then restored."""
        snaps = self._path(id, "fs", "snapshots")
        try:
            with open(archive, "rb") as src, \
                    open(os.path.join(snaps, "import", "template"), "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            with open(os.path.join(snaps, "template", "ctl"), "w", encoding="utf-8") as ctl:
                ctl.write("restore\n")
        except OSError as e:
            raise map_error(e, "sandbox", f"sandbox {id} template") from None

    def get_config(self, id):
        """Its own config (ini text)."""
        try:
            with open(self._path(id, "config"), encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            raise map_error(e, "sandbox", f"sandbox {id}") from None

    def set_config(self, id, text):
        """Replaces its config whole; returns once it runs with it (a sleeping one reads it when
        it wakes). ValidationError if it does not load, SandboxLimitError past a budget; either
        way the config stays as it was (the fleet's status says why)."""
        if not isinstance(text, str):
            raise ValidationError("a config is ini text")
        try:
            with open(self._path(id, "config"), "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise map_error(e, "sandbox", f"sandbox {id} config") from None

    def list(self):
        """Every sandbox with its state (running, sleeping, ...), sorted by id."""
        out = []
        for name in sorted(os.listdir(self.root)):
            if name in ("clone", "status"):
                continue
            try:
                out.append(self.get_info(name))
            except SandboxNotFoundError:
                pass  # gone meanwhile
        return out

    def get_info(self, id):
        try:
            return _info(id, _status(self._path(id, "status")))
        except OSError as e:
            raise map_error(e, "sandbox", f"sandbox {id}") from None

    def connect(self, id, workspace_path=None):
        """The sandbox there is (SandboxNotFoundError if none); a sleeping one wakes on use."""
        self.get_info(id)
        return FleetSandbox(self, id, workspace_path)

    def get_sandbox(self, id, workspace_path=None):
        """Cloudflare's getSandbox(id): the sandbox, made if it is not there."""
        try:
            return self.create(id, workspace_path)
        except SandboxError as e:
            if e.code != "SANDBOX_ALREADY_EXISTS":
                raise
        return FleetSandbox(self, id, workspace_path)

    def kill(self, id):
        """Destroys it: its processes, mounts, uid and files; returns once it is gone."""
        try:
            os.rmdir(self._path(id))
        except OSError as e:
            raise map_error(e, "sandbox", f"sandbox {id}") from None

    def set_keep_alive(self, id, on):
        if not isinstance(on, bool):
            raise ValidationError("set_keep_alive takes True or False")
        try:
            with open(self._path(id, "keep_alive"), "w", encoding="utf-8") as f:
                f.write("yes\n" if on else "no\n")
        except OSError as e:
            raise map_error(e, "sandbox", f"sandbox {id}") from None

    def status(self):
        """The fleet's own status: counts by state, its bound, the last create refused."""
        st = _status(os.path.join(self.root, "status"))
        return {k: int(v) if v.isdigit() else v for k, v in st.items()}


def get_fleet(root):
    """The fleet mounted at `root`; a path that is no fleet is a SandboxError that says so.
    Nothing here reads clone, which would make a sandbox."""
    try:
        with open(os.path.join(root, "status"), encoding="utf-8") as f:
            ok = f.read().startswith("sandboxes ")
    except OSError:
        ok = False
    if not ok:
        raise SandboxError(f"{root}: not an sbxfs fleet (it has no fleet status)", errno="ENOENT")
    return Fleet(root)
