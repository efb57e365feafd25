import { useMemo, useState } from "preact/hooks";
import { imagePath, sessionPath, useApi } from "./api.js";
import { Crumbs, Loading, num, reward, TraceFlags } from "./format.js";
import { html } from "./html.js";
import { buildRows, estimator, FOLDABLE, KIND_LABEL, markersOf } from "./trace-rows.js";
import { VirtualList } from "./virtual-list.js";

export function TracePage({ task, session, index }) {
  const { data, error } = useApi(`${sessionPath(task, session)}/traces/${index}`);
  if (!data)
    return html`<${Crumbs} task=${task} session=${session} trace=${index} /><${Loading} error=${error} />`;
  return html`<${TraceView} t=${data} key=${`${task}/${session}/${index}`} />`;
}

function TraceView({ t }) {
  const stats = useMemo(() => traceStats(t), [t]);
  // The system prompt starts folded, unless the chain break is inside it (template drift shows there).
  const breakAt = t.break?.position ?? -1;
  const [folded, setFolded] = useState(
    () =>
      new Set(
        t.segments.flatMap((s, k) =>
          s.kind === "system" && !(breakAt >= s.start && breakAt < s.end) ? [k] : [],
        ),
      ),
  );
  const [shade, setShade] = useState(true);
  const markers = useMemo(() => markersOf(t), [t]);
  const rows = useMemo(() => buildRows(t, folded, markers), [t, folded, markers]);
  const estimate = useMemo(() => estimator(t, Math.min(innerWidth, 1400)), [t]);
  const toggle = (k) => {
    const next = new Set(folded);
    if (next.has(k)) next.delete(k);
    else next.add(k);
    setFolded(next);
  };
  const foldKinds = (kinds) =>
    setFolded(new Set(t.segments.flatMap((s, k) => (kinds.has(s.kind) ? [k] : []))));
  const base = `#/task/${encodeURIComponent(t.task_id)}/session/${encodeURIComponent(t.session_id)}/trace/`;
  const renderRow = (row) => {
    if (row.type === "head")
      return html`<${SegmentHead} t=${t} k=${row.seg} folded=${folded.has(row.seg)} onToggle=${toggle} />`;
    if (row.type === "marker")
      return html`<div class=${`marker m-${row.kind}`} data-testid=${`marker-${row.kind}`}>${row.label}</div>`;
    return html`<${Tokens} t=${t} from=${row.from} to=${row.to} shade=${shade} />`;
  };
  return html`<div class="trace-page" data-testid="trace-page">
    <header>
      <${Crumbs} task=${t.task_id} session=${t.session_id} trace=${t.index} />
      <h1>
        Trace ${t.index} <small>of ${t.trace_count}</small>
        ${t.index > 0 && html` <a class="nav" href=${base + (t.index - 1)}>← prev</a>`}
        ${t.index + 1 < t.trace_count && html` <a class="nav" href=${base + (t.index + 1)}>next →</a>`}
        <${TraceFlags} t=${t.extras} />
      </h1>
      <p class="facts" data-testid="trace-stats">
        ${`${num(t.ids.length)} tokens (${num(t.prompt_len)} prompt, ${num(t.ids.length - t.prompt_len)} response) · `}
        <b><span data-testid="trainable-count">${num(stats.trainable)}</span> trainable</b>${" in "}
        <span data-testid="trainable-spans">${stats.spans}</span>${` spans · reward ${reward(t.reward)} · finish ${t.finish_reason ?? "–"} · policy ${t.policy_version ?? "–"} · `}
        ${t.logprobs ? `mean logprob ${stats.meanLogprob.toFixed(3)}, min ${stats.minLogprob.toFixed(3)}` : "no logprobs"}${` · ${t.capture_ids.length} captures`}
      </p>
      ${t.extras.orphan && html`<p class="warn" data-testid="orphan">Orphan capture${t.extras.orphan_reason ? `: ${t.extras.orphan_reason}` : ""}. It extends no chain of this session.</p>`}
      ${t.extras.capture_gaps > 0 && html`<p class="warn" data-testid="gaps">${t.extras.capture_gaps} capture gap(s): calls missing between the captures of this chain.</p>`}
      ${t.break && html`<${BreakPanel} b=${t.break} base=${base} />`}
      ${t.images.length > 0 && html`<${Images} hashes=${t.images} />`}
      <div class="toolbar">
        <label><input type="checkbox" checked=${shade} onChange=${(e) => setShade(e.currentTarget.checked)} data-testid="shade-toggle" /> logprob shading</label>
        <button onClick=${() => foldKinds(new Set(["system"]))}>unfold all but system</button>
        <button onClick=${() => foldKinds(new Set())} data-testid="unfold-all">unfold all</button>
        <button onClick=${() => foldKinds(FOLDABLE)}>fold tools, thinking, system</button>
        <${Legend} />
      </div>
    </header>
    <${VirtualList} rows=${rows} estimate=${estimate} renderRow=${renderRow} testid="token-list" />
  </div>`;
}

function traceStats(t) {
  let trainable = 0;
  let spans = 0;
  let sum = 0;
  let min = 0;
  t.mask.forEach((m, i) => {
    if (m !== 1) return;
    trainable++;
    if (i === 0 || t.mask[i - 1] !== 1) spans++;
    const lp = t.logprobs?.[i] ?? 0;
    sum += lp;
    min = Math.min(min, lp);
  });
  return { trainable, spans, meanLogprob: trainable ? sum / trainable : 0, minLogprob: min };
}

function SegmentHead({ t, k, folded, onToggle }) {
  const s = t.segments[k];
  const first = k === 0 || t.segments[k - 1].message !== s.message;
  let trainable = 0;
  for (let i = Math.max(s.start, t.prompt_len); i < s.end; i++) trainable += t.mask[i - t.prompt_len];
  const preview = folded
    ? t.text
        .slice(s.start, Math.min(s.end, s.start + 40))
        .join("")
        .replace(/\s+/g, " ")
        .slice(0, 90)
    : "";
  return html`<div class=${`seg-head k-${s.kind}${first ? " first" : ""}`} data-testid="segment" data-kind=${s.kind} data-folded=${folded}>
    <button class="fold" onClick=${() => onToggle(k)} aria-expanded=${!folded} title=${folded ? "unfold" : "fold"}>${folded ? "▸" : "▾"}</button>
    <span class="kind">${KIND_LABEL[s.kind] ?? s.kind}</span>
    <span class="muted">${num(s.end - s.start)} tokens${trainable ? ` · ${num(trainable)} trainable` : ""}${s.end > t.prompt_len ? (s.start >= t.prompt_len ? " · response" : " · prompt + response") : ""}</span>
    ${folded && html`<span class="preview">${preview}…</span>`}
  </div>`;
}

/** Tokens from..to: context runs as plain text, each trainable token its own span (mask, logprob). */
function Tokens({ t, from, to, shade }) {
  const out = [];
  let run = "";
  let runClass = "";
  const flush = () => {
    if (run) out.push(html`<span class=${runClass}>${run}</span>`);
    run = "";
  };
  for (let i = from; i < to; i++) {
    const r = i - t.prompt_len;
    if (r >= 0 && t.mask[r] === 1) {
      flush();
      const lp = t.logprobs?.[r];
      const style = shade && lp != null ? { background: shadeOf(lp) } : undefined;
      // A trainable line break has no width to color: a drawn ↵ (CSS, not copied) shows it.
      const tokClass = t.text[i].includes("\n") && t.text[i].trim() === "" ? "tok t nl" : "tok t";
      out.push(
        html`<span class=${tokClass} data-pos=${i} style=${style} title=${`id ${t.ids[i]}${lp != null ? ` · logprob ${lp.toFixed(4)} · p ${Math.exp(lp).toFixed(3)}` : ""}`}>${t.text[i]}</span>`,
      );
    } else {
      const cls = r >= 0 ? "ctx" : "prompt";
      if (cls !== runClass) flush();
      runClass = cls;
      run += t.text[i];
    }
  }
  flush();
  return html`<div class="tokens">${out}</div>`;
}

/** p = 1 green, p -> 0 red. */
function shadeOf(lp) {
  const p = Math.exp(lp);
  return `hsl(${Math.round(120 * p)} 75% 82%)`;
}

function BreakPanel({ b, base }) {
  return html`<section class="break-panel" data-testid="break-panel">
    <p><b>Chain break</b>: <span class="badge break" data-testid="break-reason">${b.reason ?? "unknown"}</span>
      ${b.parent_trace != null && html` · continues from <a href=${base + b.parent_trace}>trace ${b.parent_trace}</a>`}
      ${b.parent_tool_call_id && html` · spawned by tool call <code data-testid="parent-tool-call">${b.parent_tool_call_id}</code>`}
      ${b.position != null && html` · first differing prompt token at ${num(b.position)}`}</p>
    ${
      b.parent_side &&
      html`<div class="diff" data-testid="break-diff">
        <div><span class="side">trace ${b.parent_trace}</span><code><span class="common">${b.common.join("")}</span><del>${b.parent_side.join("") || "(end)"}</del></code></div>
        <div><span class="side">this prompt</span><code><span class="common">${b.common.join("")}</span><ins>${b.this_side.join("") || "(end)"}</ins></code></div>
      </div>`
    }
    ${b.context && html`<div class="diff"><span class="side">break context</span><code>${b.context.join("")}</code></div>`}
  </section>`;
}

/** The trace's images in the order the engine saw them (each turn's screenshots). */
function Images({ hashes }) {
  return html`<section class="images" data-testid="trace-images">
    <b>${hashes.length} image${hashes.length === 1 ? "" : "s"}</b>
    ${hashes.map(
      (h, i) => html`<figure>
        <a href=${imagePath(h)} target="_blank" rel="noopener"><img class="thumb" src=${imagePath(h)} alt=${`image ${i + 1}`} data-testid="trace-image" data-hash=${h} /></a>
        <figcaption>${i + 1}</figcaption>
      </figure>`,
    )}
  </section>`;
}

function Legend() {
  return html`<span class="legend" data-testid="legend">
    <span><i class="sw prompt"></i>prompt</span>
    <span><i class="sw ctx"></i>inserted (mask 0)</span>
    <span><i class="sw t"></i>trainable (mask 1), ↵ a trainable line break</span>
    <span><i class="sw grad"></i>logprob: p≈1 … p≈0</span>
    <span><i class="sw m-break"></i>chain break</span>
  </span>`;
}
