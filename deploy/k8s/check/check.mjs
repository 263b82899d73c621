// Checks rendered rein manifests (`kubectl kustomize deploy/k8s/overlays/NAME`):
//  1. every object validates against the Kubernetes API schemas (kubernetes-models, generated
//     from Kubernetes' OpenAPI; custom resources are named and skipped);
//  2. rein's deployment rules (probes, limits, non-root, no privilege escalation, executors
//     without egress, the API key never in an environment variable, only rein's own images,
//     mTLS on every service with certificates from Secrets, executors and planners that take
//     calls only from the routers' identity, no password on a command line...).
// Usage: node check.mjs OVERLAY_NAME < rendered.yaml   (exit 1 and one line per problem)
//        node check.mjs --self-test OVERLAY_NAME < rendered.yaml   (each rule must catch a
//        manifest broken on purpose)
import yaml from "js-yaml";
import fs from "node:fs";

const IMAGES = new Set(["rein-router", "rein-planner", "rein-executor", "reinctl"]);
const SHUTDOWN_GRACE_SECONDS = 10;  // the services' --shutdown_grace_seconds default

async function validateSchema(doc) {
  const { apiVersion, kind } = doc;
  if (!apiVersion || !kind) return [`object without apiVersion/kind`];
  let mod;
  try {
    mod = await import(`kubernetes-models/${apiVersion}/${kind}`);
  } catch {
    return null;  // not a built-in kind
  }
  const Model = mod[kind] ?? mod.default;
  try {
    new Model(doc).validate();
    return [];
  } catch (e) {
    return [`${kind}/${doc.metadata?.name}: ${e.message}`];
  }
}

function podTemplates(docs) {
  return docs.filter(d => ["Deployment", "StatefulSet", "DaemonSet", "Job"].includes(d.kind))
      .map(d => ({ owner: `${d.kind}/${d.metadata.name}`, doc: d, spec: d.spec.template.spec,
                   meta: d.spec.template.metadata ?? {} }));
}

// The health probe of a container: {service} for a grpc: probe or an exec of rein-health
// (whose second positional argument is the service), else null.
function healthProbe(probe) {
  if (!probe) return null;
  if (probe.grpc) return { kind: "grpc", service: probe.grpc.service ?? "", args: [] };
  const command = probe.exec?.command ?? [];
  if (!(command[0] ?? "").endsWith("/rein-health")) return null;
  const positional = command.slice(1).filter(a => !a.startsWith("--"));
  return { kind: "exec", service: positional[1] ?? "", args: command.slice(1) };
}

const TLS_FLAGS = ["--tls_cert=", "--tls_key=", "--tls_ca="];
const ROUTER_IDENTITY = "rein-router";

// Paths mounted from a Secret in a pod (mountPath of every volume with `secret`).
function secretMounts(spec, container) {
  const secrets = new Map((spec.volumes ?? []).filter(v => v.secret).map(v => [v.name, v.secret.secretName]));
  return (container.volumeMounts ?? []).filter(m => secrets.has(m.name))
      .map(m => ({ path: m.mountPath.replace(/\/$/, ""), secret: secrets.get(m.name) }));
}
function fromSecret(spec, container, path) {
  return secretMounts(spec, container).find(m => path.startsWith(m.path + "/")) ?? null;
}

// Whether a command-line word carries a password: a URI's user:password@, a password=
// parameter, or a $(VAR) that Kubernetes expands from an environment variable set from a Secret.
function passwordIn(word, container) {
  if (/[a-z][a-z0-9+.-]*:\/\/[^\/@\s:]*:[^\/@\s]+@/i.test(word)) return "a URI with a password";
  if (/password=/i.test(word)) return "a password= parameter";
  for (const m of word.matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)) {
    const env = (container.env ?? []).find(e => e.name === m[1]);
    if (env?.valueFrom?.secretKeyRef) return `$(${m[1]}), a Secret expanded into the command line`;
  }
  return null;
}

function imageName(image) {
  const last = image.split("/").pop();
  return last.split("@")[0].split(":")[0];
}

function checkRules(docs, overlay) {
  const problems = [];
  const bad = (what) => problems.push(what);
  for (const { owner, doc, spec, meta } of podTemplates(docs)) {
    const podSc = spec.securityContext ?? {};
    if (!(spec.terminationGracePeriodSeconds > SHUTDOWN_GRACE_SECONDS)) {
      bad(`${owner}: terminationGracePeriodSeconds must exceed the services' ${SHUTDOWN_GRACE_SECONDS} s shutdown grace`);
    }
    const ann = meta.annotations ?? {};
    if (ann["prometheus.io/scrape"] !== "true" || !ann["prometheus.io/port"]) {
      bad(`${owner}: no Prometheus scrape annotations`);
    }
    for (const c of spec.containers ?? []) {
      const where = `${owner} container ${c.name}`;
      const sc = c.securityContext ?? {};
      if (!IMAGES.has(imageName(c.image ?? ""))) bad(`${where}: image ${c.image} is not one ./dev images builds`);
      const args = c.args ?? [];
      const tls = TLS_FLAGS.every(f => args.some(a => a.startsWith(f)));
      for (const [kind, probe] of [["readiness", c.readinessProbe], ["liveness", c.livenessProbe]]) {
        const health = healthProbe(probe);
        if (!health) bad(`${where}: no gRPC health ${kind} probe (grpc: or an exec of rein-health)`);
        else if (tls && health.kind === "grpc") bad(`${where}: a grpc: ${kind} probe cannot speak TLS (exec rein-health with --tls_*)`);
        else if (tls && !TLS_FLAGS.every(f => health.args.some(a => a.startsWith(f)))) bad(`${where}: the ${kind} probe has no TLS flags`);
      }
      // mTLS between every pair of services: certificates from Secrets the operator provides.
      for (const flag of TLS_FLAGS) {
        const arg = args.find(a => a.startsWith(flag));
        if (!arg) bad(`${where}: no ${flag}... (every service serves mTLS)`);
        else if (!fromSecret(spec, c, arg.slice(flag.length))) bad(`${where}: ${arg} is not in a mounted Secret`);
      }
      for (const flag of ["--allow_unauthenticated", "--allow_plaintext_tokens"]) {
        if (args.some(a => a === flag || a.startsWith(flag + "="))) bad(`${where}: ${flag}`);
      }
      for (const word of [...args, ...(c.command ?? []), ...(healthProbe(c.readinessProbe)?.args ?? [])]) {
        const found = passwordIn(word, c);
        if (found) bad(`${where}: a password on the command line (${found})`);
      }
      for (const kind of ["requests", "limits"]) {
        for (const r of ["cpu", "memory"]) {
          if (!c.resources?.[kind]?.[r]) bad(`${where}: no ${kind}.${r}`);
        }
      }
      if ((sc.runAsNonRoot ?? podSc.runAsNonRoot) !== true) bad(`${where}: may run as root`);
      if ((sc.runAsUser ?? podSc.runAsUser) === 0) bad(`${where}: runs as uid 0`);
      if (sc.allowPrivilegeEscalation !== false) bad(`${where}: allowPrivilegeEscalation is not false`);
      if (sc.readOnlyRootFilesystem !== true) bad(`${where}: root filesystem is writable`);
      if (!(sc.capabilities?.drop ?? []).includes("ALL")) bad(`${where}: capabilities not dropped`);
      if (sc.privileged) bad(`${where}: privileged`);
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef;
        if (/ANTHROPIC|API_KEY/i.test(e.name) || (ref && ref.name === "rein-anthropic") ||
            /sk-ant-/.test(e.value ?? "")) {
          bad(`${where}: the Anthropic key in environment variable ${e.name}`);
        }
      }
      for (const a of c.args ?? []) {
        if (/sk-ant-/.test(a)) bad(`${where}: an API key in the arguments`);
      }
    }
  }
  const byName = (kind, name) => docs.find(d => d.kind === kind && d.metadata.name === name);
  const templateOf = (name) => podTemplates(docs).find(t => t.doc.metadata.name === name);

  // The planner reads the key from the mounted Secret.
  const planner = templateOf("rein-planner");
  for (const name of ["rein-planner", "rein-executor"]) {
    const t = templateOf(name);
    const allowed = (t?.spec.containers[0].args ?? []).find(a => a.startsWith("--allowed_clients="));
    if (allowed && allowed !== `--allowed_clients=${ROUTER_IDENTITY}`) {
      bad(`${name}: ${allowed} lets others than the routers (${ROUTER_IDENTITY}) call`);
    }
  }
  if (!planner) bad("no rein-planner workload");
  else {
    const c = planner.spec.containers[0];
    if (!(c.args ?? []).some(a => a.startsWith("--api_key_file="))) bad("planner: no --api_key_file");
    if (!(planner.spec.volumes ?? []).some(v => v.secret?.secretName === "rein-anthropic")) {
      bad("planner: the rein-anthropic Secret is not mounted as a file");
    }
  }
  // Executors: readiness on the sandbox, headless Service, no egress, ingress only from routers.
  const executor = templateOf("rein-executor");
  if (!executor) bad("no rein-executor workload");
  else if (healthProbe(executor.spec.containers[0].readinessProbe)?.service !== "rein.v1.Executor.sandbox") {
    bad("executor: readiness is not rein.v1.Executor.sandbox");
  }
  const svc = byName("Service", "rein-executor");
  if (svc?.spec?.clusterIP !== "None") bad("executor Service is not headless");
  const execPolicies = docs.filter(d => d.kind === "NetworkPolicy" &&
      d.spec.podSelector?.matchLabels?.["app.kubernetes.io/name"] === "rein-executor");
  if (execPolicies.length === 0) bad("no NetworkPolicy for executors");
  for (const p of execPolicies) {
    if (!(p.spec.policyTypes ?? []).includes("Egress") || (p.spec.egress ?? []).length !== 0) {
      bad(`NetworkPolicy/${p.metadata.name}: executors must have no egress at all`);
    }
    for (const rule of p.spec.ingress ?? []) {
      const grpcPort = (rule.ports ?? []).some(pt => pt.port === 50053);
      const fromRouters = (rule.from ?? []).length > 0 && rule.from.every(f =>
          f.podSelector?.matchLabels?.["app.kubernetes.io/name"] === "rein-router" && !f.namespaceSelector);
      if (grpcPort && !fromRouters) bad(`NetworkPolicy/${p.metadata.name}: executor port open beyond routers`);
      if (!(rule.ports ?? []).length) bad(`NetworkPolicy/${p.metadata.name}: an ingress rule without ports`);
    }
  }
  for (const name of ["rein-planner", "rein-router"]) {
    if (!docs.some(d => d.kind === "NetworkPolicy" &&
        d.spec.podSelector?.matchLabels?.["app.kubernetes.io/name"] === name)) {
      bad(`no NetworkPolicy for ${name}`);
    }
  }
  // The shared workspace volume.
  const pvc = byName("PersistentVolumeClaim", "rein-workspaces");
  if (!(pvc?.spec?.accessModes ?? []).includes("ReadWriteMany")) bad("workspaces are not ReadWriteMany");

  // The routers, per overlay.
  const router = templateOf("rein-router");
  if (!router) bad("no rein-router workload");
  else {
    const args = router.spec.containers[0].args ?? [];
    if (!args.includes("--executor_target=dns:///rein-executor:50053")) bad("router: executors not reached through dns:///");
    if (!args.some(a => a.startsWith("--auth_tokens_file=")) || args.includes("--allow_unauthenticated")) {
      bad("router: the public port must require tokens (--auth_tokens_file, no --allow_unauthenticated)");
    }
    if (overlay === "single") {
      if (router.doc.kind !== "StatefulSet" || router.doc.spec.replicas !== 1) bad("single: the router must be a StatefulSet of one");
      if (!args.some(a => a.startsWith("--store=sqlite:"))) bad("single: the router must use SQLite");
      if (!(router.doc.spec.volumeClaimTemplates ?? []).length) bad("single: SQLite needs a PersistentVolumeClaim");
    }
    if (overlay === "ha") {
      if (router.doc.spec.replicas !== 3) bad("ha: three routers");
      const store = args.find(a => a.startsWith("--store=@"));
      const mount = store && fromSecret(router.spec, router.spec.containers[0], store.slice("--store=@".length));
      if (!mount || mount.secret !== "rein-postgres-app") {
        bad("ha: the store must be read from the Secret rein-postgres-app mounted as a file (--store=@PATH)");
      }
      if (!args.some(a => a.startsWith("--lease_ttl="))) bad("ha: no --lease_ttl");
      if (!args.some(a => a.startsWith("--router_id="))) bad("ha: no --router_id");
      for (const target of ["rein-planner", "rein-executor"]) {
        if (!docs.some(d => d.kind === "HorizontalPodAutoscaler" && d.spec.scaleTargetRef.name === target)) {
          bad(`ha: no HorizontalPodAutoscaler for ${target}`);
        }
      }
      for (const name of ["rein-router", "rein-planner", "rein-executor"]) {
        if (!docs.some(d => d.kind === "PodDisruptionBudget" &&
            d.spec.selector?.matchLabels?.["app.kubernetes.io/name"] === name)) {
          bad(`ha: no PodDisruptionBudget for ${name}`);
        }
      }
      if (!(router.spec.topologySpreadConstraints ?? []).length) bad("ha: routers without topology spread");
    }
  }
  return problems;
}

async function check(docs, overlay) {
  const problems = [];
  const skipped = [];
  for (const doc of docs) {
    const schema = await validateSchema(doc);
    if (schema === null) skipped.push(`${doc.apiVersion} ${doc.kind}/${doc.metadata?.name}`);
    else problems.push(...schema);
  }
  problems.push(...checkRules(docs, overlay));
  return { problems, skipped };
}

// Manifests broken on purpose: each must be caught.
const MUTATIONS = [
  ["a container without a readiness probe", d => { delete tpl(d, "rein-router").containers[0].readinessProbe; }],
  ["a container without limits", d => { delete tpl(d, "rein-planner").containers[0].resources.limits; }],
  ["a container allowed to escalate", d => { tpl(d, "rein-executor").containers[0].securityContext.allowPrivilegeEscalation = true; }],
  ["a container that may run as root", d => { tpl(d, "rein-planner").securityContext.runAsNonRoot = false; }],
  ["executors with egress", d => { d.find(x => x.kind === "NetworkPolicy" && x.metadata.name === "rein-executor").spec.egress = [{}]; }],
  ["the key in an env var", d => { tpl(d, "rein-planner").containers[0].env = [{ name: "ANTHROPIC_API_KEY", valueFrom: { secretKeyRef: { name: "rein-anthropic", key: "api-key" } } }]; }],
  ["a foreign image", d => { tpl(d, "rein-executor").containers[0].image = "docker.io/library/busybox:latest"; }],
  ["a router without tokens", d => { const c = tpl(d, "rein-router").containers[0]; c.args = c.args.filter(a => !a.startsWith("--auth_tokens_file=")).concat(["--allow_unauthenticated"]); }],
  ["a schema violation", d => { tpl(d, "rein-router").containers[0].ports[0].containerPort = "fifty"; }],
  ["a container without TLS flags", d => { const c = tpl(d, "rein-executor").containers[0]; c.args = c.args.filter(a => !a.startsWith("--tls_")); }],
  ["TLS files not from a Secret", d => { const s = tpl(d, "rein-planner"); s.volumes.find(v => v.name === "tls").emptyDir = {}; delete s.volumes.find(v => v.name === "tls").secret; }],
  ["a plaintext port allowed", d => { tpl(d, "rein-planner").containers[0].args.push("--allow_unauthenticated"); }],
  ["plaintext tokens allowed", d => { tpl(d, "rein-router").containers[0].args.push("--allow_plaintext_tokens"); }],
  ["a grpc: probe on a TLS port", d => { tpl(d, "rein-router").containers[0].livenessProbe = { grpc: { port: 50051 } }; }],
  ["executors that take calls from others", d => { const c = tpl(d, "rein-executor").containers[0]; c.args = c.args.map(a => a.startsWith("--allowed_clients=") ? "--allowed_clients=rein-router,rein-client" : a); }],
  ["a password in a URI on the command line", d => { const c = tpl(d, "rein-router").containers[0]; c.args = c.args.concat(["--store=postgresql://rein:s3cret@db:5432/rein"]); }],
  ["a Secret expanded into the command line", d => { const c = tpl(d, "rein-router").containers[0]; c.env = (c.env ?? []).concat([{ name: "REIN_STORE", valueFrom: { secretKeyRef: { name: "rein-postgres-app", key: "uri" } } }]); c.args = c.args.concat(["--store=$(REIN_STORE)"]); }],
];
function tpl(docs, name) {
  return docs.find(d => d.spec?.template && d.metadata.name === name).spec.template.spec;
}

const args = process.argv.slice(2);
const selfTest = args[0] === "--self-test";
const overlay = selfTest ? args[1] : args[0];
const docs = yaml.loadAll(fs.readFileSync(0, "utf8")).filter(Boolean);
if (docs.length === 0) {
  console.log(`${overlay}: nothing rendered`);
  process.exit(1);
}
if (selfTest) {
  let failed = 0;
  const baseline = new Set((await check(docs, overlay)).problems);
  for (const [what, mutate] of MUTATIONS) {
    const copy = structuredClone(docs);
    mutate(copy);
    const { problems } = await check(copy, overlay);
    if (!problems.some(p => !baseline.has(p))) {
      console.log(`${overlay}: self-test: ${what} was NOT caught`);
      failed++;
    }
  }
  console.log(`${overlay}: self-test: ${MUTATIONS.length - failed}/${MUTATIONS.length} broken manifests caught`);
  process.exit(failed ? 1 : 0);
}
const { problems, skipped } = await check(docs, overlay);
for (const s of skipped) console.log(`${overlay}: not a built-in kind, schema not checked: ${s}`);
for (const p of problems) console.log(`${overlay}: ${p}`);
console.log(`${overlay}: ${docs.length} objects, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
