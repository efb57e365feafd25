/**
 * A small web app for computer-use tasks: one form, described by the task's seed, served on
 * 127.0.0.1 inside the session's sandbox. Every save the browser sends is appended to
 * `.app/events.jsonl` in the work dir (the judge replays them: form-state.mjs).
 *
 *   node server.mjs [--port 8765] [--dir .app]
 */
import { appendFileSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { applyEvent, initialState, parseSeed } from "./form-state.mjs";

const { values: args } = parseArgs({
  options: { port: { type: "string", default: "8765" }, dir: { type: "string", default: ".app" } },
});
const seed = parseSeed(readFileSync(join(args.dir, "seed.json"), "utf8"));
const eventsFile = join(args.dir, "events.jsonl");
let state = initialState(seed);

const html = (s) =>
  String(s).replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c],
  );

function fieldHtml(field) {
  const value = state.values[field.name];
  const id = `f-${field.name}`;
  if (field.type === "checkbox") {
    return `<p><label><input type="checkbox" id="${id}" name="${field.name}"${value ? " checked" : ""}> ${html(field.label)}</label></p>`;
  }
  if (field.type === "select") {
    const options = field.options
      .map((o) => `<option value="${html(o)}"${o === value ? " selected" : ""}>${html(o)}</option>`)
      .join("");
    return `<p><label for="${id}">${html(field.label)}</label> <select id="${id}" name="${field.name}">${options}</select></p>`;
  }
  return `<p><label for="${id}">${html(field.label)}</label> <input type="text" id="${id}" name="${field.name}" value="${html(value)}"></p>`;
}

function page() {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${html(seed.title)}</title></head>
<body style="font-family: sans-serif; margin: 2em">
<h1>${html(seed.title)}</h1>
<form id="form" onsubmit="return false">
${seed.fields.map(fieldHtml).join("\n")}
<button type="button" id="save">Save</button>
</form>
<p id="status" role="status"></p>
<script>
document.getElementById("save").addEventListener("click", async () => {
  const values = {};
  for (const el of document.getElementById("form").elements) {
    if (!el.name) continue;
    values[el.name] = el.type === "checkbox" ? el.checked : el.value;
  }
  const res = await fetch("/api/save", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ values }) });
  document.getElementById("status").textContent = res.ok ? "Saved." : "Not saved: " + (await res.text());
});
</script>
</body></html>`;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
      if (body.length > 65536) reject(new Error("body too large"));
    });
    req.on("end", () => resolve(body));
    req.on("error", reject);
  });
}

createServer(async (req, res) => {
  if (req.method === "GET" && (req.url === "/" || req.url === "/index.html")) {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(page());
    return;
  }
  if (req.method === "GET" && req.url === "/api/state") {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(state));
    return;
  }
  if (req.method === "POST" && req.url === "/api/save") {
    let event;
    try {
      event = { type: "save", values: JSON.parse(await readBody(req)).values };
    } catch (err) {
      res.writeHead(400).end(`bad request: ${err.message}`);
      return;
    }
    const applied = applyEvent(seed, state, event);
    // Every request is recorded, refused ones too: the judge's replay refuses them the same way.
    appendFileSync(eventsFile, `${JSON.stringify(event)}\n`);
    if (applied.error) {
      res.writeHead(422).end(applied.error);
      return;
    }
    state = applied.state;
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(state));
    return;
  }
  res.writeHead(404).end("not found");
}).listen(Number(args.port), "127.0.0.1", () => console.log(`form app on http://127.0.0.1:${args.port}/`));
