// `npm run bench` runs every benchmark in bench/ and rewrites BENCHMARKS.md;
// `npm run bench -- NAME [NAME...]` runs only those and replaces only their sections.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Benchmark } from "./benchmark.ts";

const here = dirname(fileURLToPath(import.meta.url));
const outFile = join(here, "..", "BENCHMARKS.md");
const NOT_BENCHMARKS = new Set(["run.ts", "benchmark.ts"]);

async function loadAll(): Promise<Benchmark[]> {
  const files = readdirSync(here)
    .filter((f) => f.endsWith(".ts") && !NOT_BENCHMARKS.has(f) && !f.endsWith(".test.ts"))
    .sort();
  const loaded: Benchmark[] = [];
  for (const f of files) {
    const mod = await import(join(here, f));
    if (mod.default && typeof mod.default.run === "function") loaded.push(mod.default as Benchmark);
  }
  return loaded;
}

function machineNotes(): string {
  const cpu = os.cpus()[0]?.model ?? "unknown CPU";
  let git = "";
  try {
    git = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch {
    git = "unknown";
  }
  return [
    `- Machine: ${os.cpus().length} cores (${cpu}), ${Math.round(os.totalmem() / 2 ** 30)} GiB RAM, ${os.platform()} ${os.release()}`,
    `- Node ${process.version}; commit ${git}; run at ${new Date().toISOString()}`,
    "- Shared, noisy machine: compare ratios measured side by side in one run, not absolute numbers across runs.",
  ].join("\n");
}

const section = (name: string, body: string) =>
  `<!-- bench:${name} -->\n${body.trim()}\n<!-- /bench:${name} -->`;

function replaceSection(doc: string, name: string, body: string): string {
  const re = new RegExp(`<!-- bench:${name} -->[\\s\\S]*?<!-- /bench:${name} -->`);
  return re.test(doc) ? doc.replace(re, section(name, body)) : `${doc.trimEnd()}\n\n${section(name, body)}\n`;
}

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const all = await loadAll();
  const unknown = wanted.filter((w) => !all.some((b) => b.name === w));
  if (unknown.length) {
    console.error(
      `unknown benchmark(s): ${unknown.join(", ")}; available: ${all.map((b) => b.name).join(", ")}`,
    );
    process.exitCode = 2;
    return;
  }
  const selected = wanted.length ? all.filter((b) => wanted.includes(b.name)) : all;
  let doc: string;
  let previous = "";
  try {
    previous = readFileSync(outFile, "utf8");
  } catch {
    previous = "";
  }
  doc = wanted.length ? previous : "";
  if (!doc) {
    doc = [
      "# Benchmarks",
      "",
      "Produced by `npm run bench` (all) or `npm run bench -- NAME` (one section). Never part of `npm test`.",
      "Each section names the command that produced it and the machine it ran on.",
    ].join("\n");
  }
  // Sections measured by hand with their own command (`<!-- manual:NAME -->`, e.g. the RL run of
  // examples/rl_on_cpu.py, 10+ minutes a seed) are kept when everything else is rewritten.
  if (!wanted.length)
    for (const kept of previous.match(/<!-- manual:([\w-]+) -->[\s\S]*?<!-- \/manual:\1 -->/g) ?? [])
      doc = `${doc.trimEnd()}\n\n${kept}\n`;
  for (const bench of selected) {
    console.error(`bench: running ${bench.name}...`);
    const { markdown } = await bench.run();
    const body = [
      `## ${bench.title ?? bench.name}`,
      "",
      `Command: \`npm run bench -- ${bench.name}\``,
      "",
      machineNotes(),
      "",
      markdown,
    ].join("\n");
    // Read again: the file may have been edited while the benchmark ran (a run takes minutes).
    if (wanted.length) {
      try {
        doc = readFileSync(outFile, "utf8") || doc;
      } catch {
        // keep the copy read at the start
      }
    }
    doc = replaceSection(doc, bench.name, body);
    writeFileSync(outFile, `${doc.trimEnd()}\n`);
    console.log(body);
  }
}

await main();
