// SPDX-License-Identifier: MIT
// The offline schema check of the Kubernetes manifests (make
// check-kubernetes): every document of every file is parsed as YAML
// (errors and warnings both fail), validated against the Kubernetes
// OpenAPI schema of its apiVersion and kind by kubernetes-models (types,
// required fields, enums), and every key it has outside free-form maps
// (labels, annotations, a ConfigMap's data...) must be a field name some
// Kubernetes schema has: the schemas themselves allow unknown fields,
// which the API server drops without a word, so a misspelt field would
// pass them. No cluster is asked.
//
//   node validate.mjs FILE.yaml...
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { parseAllDocuments } from "yaml";

const require = createRequire(import.meta.url);
const modelsDir = dirname(require.resolve("kubernetes-models/package.json"));
const machineryDir = dirname(
  require.resolve("@kubernetes-models/apimachinery/package.json"));

// Every field name the compiled schema validators test ("data.NAME").
const known = new Set();
for (const dir of [modelsDir, machineryDir]) {
  const schemas = join(dir, "_schemas");
  for (const f of readdirSync(schemas)) {
    if (!f.endsWith(".js")) continue;
    for (const m of readFileSync(join(schemas, f), "utf8")
      .matchAll(/data\.([A-Za-z_$][A-Za-z0-9_$]*)/g))
      known.add(m[1]);
  }
}
// Maps whose keys are the user's, not fields.
const freeForm = new Set(["labels", "annotations", "data", "binaryData",
  "stringData", "matchLabels", "nodeSelector", "limits", "requests"]);

function unknownKeys(value, path, out) {
  if (Array.isArray(value)) {
    value.forEach((v, i) => unknownKeys(v, `${path}[${i}]`, out));
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (!known.has(k)) out.push(`${path}.${k}`);
      if (!freeForm.has(k)) unknownKeys(v, `${path}.${k}`, out);
    }
  }
}

async function modelOf(apiVersion, kind) {
  const mod = await import(`kubernetes-models/${apiVersion}`);
  if (!mod[kind]) throw new Error(`no kind ${kind} in ${apiVersion}`);
  return mod[kind];
}

let failed = 0, checked = 0;
for (const file of process.argv.slice(2)) {
  const docs = parseAllDocuments(readFileSync(file, "utf8"),
    { prettyErrors: true, uniqueKeys: true });
  for (const [i, doc] of docs.entries()) {
    const where = `${file}#${i + 1}`;
    const problems = [...doc.errors, ...doc.warnings].map((e) => e.message);
    const obj = doc.toJS();
    if (obj === null || obj === undefined) continue;
    try {
      const Model = await modelOf(obj.apiVersion, obj.kind);
      new Model(obj).validate();
    } catch (e) {
      problems.push(e.message);
    }
    const unknown = [];
    unknownKeys(obj, "", unknown);
    for (const k of unknown)
      problems.push(`${k}: no Kubernetes schema has this field`);
    checked++;
    if (problems.length) {
      failed++;
      console.log(`FAIL: ${where} (${obj.kind} ${obj.metadata?.name}):`);
      for (const p of problems) console.log(`  ${p}`);
    } else {
      console.log(`PASS: ${where}: ${obj.apiVersion} ${obj.kind} ${obj.metadata?.name}`);
    }
  }
}
console.log(`${checked - failed} passed, ${failed} failed`);
process.exit(failed || !checked ? 1 : 0);
