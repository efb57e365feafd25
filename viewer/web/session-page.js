import { imagePath, sessionPath, useApi } from "./api.js";
import { Crumbs, Loading, ms, num, reward, Status, TraceFlags } from "./format.js";
import { html } from "./html.js";

/** The newest image a call sent (a computer-use turn's screenshot), and how many it sent in all. */
function Screen({ hash, count }) {
  return html`<a href=${imagePath(hash)} target="_blank" rel="noopener" title=${`${count} image(s) in this call; the last shown`}>
    <img class="thumb" src=${imagePath(hash)} alt="screenshot" data-testid="capture-screen" data-hash=${hash} />
  </a>${count > 1 ? html` <small>+${count - 1}</small>` : ""}`;
}

export function SessionPage({ task, session }) {
  const path = sessionPath(task, session);
  const { data, error } = useApi(path);
  if (!data) return html`<${Crumbs} task=${task} session=${session} /><${Loading} error=${error} />`;
  const r = data.row;
  const traceHref = (i) =>
    `#/task/${encodeURIComponent(task)}/session/${encodeURIComponent(session)}/trace/${i}`;
  return html`
    <${Crumbs} task=${task} session=${session} />
    <h1>${session} ${r && html`<${Status} status=${r.status} />`}</h1>
    ${
      r
        ? html`<p class="facts">${`sample ${r.sample_index} · attempt ${r.attempt} · reward `}<b data-testid="session-reward">${reward(r.reward)}</b>${` · INIT ${ms(r.timings.init_ms)} · READY wait ${ms(r.timings.ready_wait_ms)} · RUNNING ${ms(r.timings.run_ms)} · POSTRUN ${ms(r.timings.postrun_ms)} · finished ${r.timings.finished_at}`}</p>`
        : html`<p class="muted">No result yet: only the captures are shown.</p>`
    }
    ${r?.error && html`<p class="error">error: ${r.error}</p>`}
    <section class="row">
      <div class="panel grow">
        <h3>Final answer</h3>
        ${
          data.agent
            ? html`<pre class="answer" data-testid="final-answer">${data.agent.final_answer ?? "(none)"}</pre>
              <p class="muted">exit code ${data.agent.exit_code ?? "–"}${data.agent.timed_out ? " · timed out" : ""}</p>`
            : html`<p class="muted">no agent record</p>`
        }
      </div>
      <div class="panel grow">
        <h3>Evaluation</h3>
        ${data.evaluation ? html`<pre class="json" data-testid="evaluation">${JSON.stringify(data.evaluation, null, 2)}</pre>` : html`<p class="muted">none</p>`}
      </div>
    </section>
    <section class="panel">
      <h3>Traces <small>builder ${data.builder ?? "–"}${data.stats ? ` · ${data.stats.captures} captures, ${data.stats.chains} chains, ${data.stats.prefix_breaks} prefix breaks` : ""}
        ${data.stats?.capture_gaps > 0 ? ` · ${data.stats.capture_gaps} capture gaps` : ""}${data.stats?.orphans > 0 ? ` · ${data.stats.orphans} orphans` : ""}</small></h3>
      <table data-testid="traces">
        <thead><tr><th>trace</th><th>prompt</th><th>response</th><th>trainable</th><th>reward</th><th>finish</th><th>policy</th><th>captures</th><th>flags</th></tr></thead>
        <tbody>${data.traces.map(
          (t) => html`<tr>
            <td><a href=${traceHref(t.index)} data-testid="trace-link">trace ${t.index}</a></td>
            <td>${num(t.prompt)}</td><td>${num(t.response)}</td><td>${num(t.trainable)}</td><td>${reward(t.reward)}</td>
            <td>${t.finish_reason ?? "–"}</td><td>${t.policy_version ?? "–"}</td><td>${t.captures}</td>
            <td>${t.parent_trace != null && html`<span class="muted">from trace ${t.parent_trace} </span>`}<${TraceFlags} t=${t} /></td>
          </tr>`,
        )}</tbody>
      </table>
    </section>
    <section class="panel">
      <h3>Captures <small>in call order</small></h3>
      <table data-testid="captures">
        <thead><tr><th>#</th><th>capture</th><th>started</th><th>latency</th><th>provider</th><th>model</th><th>prompt tok</th><th>completion tok</th><th>finish</th><th>policy version</th><th>trace</th><th>screen</th></tr></thead>
        <tbody>${data.captures.map((c, i) =>
          c.capture_id
            ? html`<tr data-testid="capture-row" class=${c.error ? "failed" : ""}>
            <td>${i + 1}</td><td><code title=${c.capture_id}>${c.capture_id.slice(-8)}</code>${c.attempt > 0 ? html` <small>attempt ${c.attempt}</small>` : ""}</td>
            <td>${c.started_at.slice(11, 23)}</td><td>${ms(c.latency_ms)}</td>
            <td><span class="provider">${c.provider}</span> <small>${c.stream ? "stream" : ""}</small></td>
            <td>${c.model_requested ?? "–"}${c.model_served && c.model_served !== c.model_requested ? html` → ${c.model_served}` : ""}</td>
            <td>${num(c.prompt_tokens)}</td><td>${num(c.completion_tokens)}${c.token_ids ? "" : html` <span class="badge err">no ids</span>`}</td>
            <td>${c.error ? html`<span class="badge err">${c.error.status}: ${c.error.message}</span>` : (c.finish_reason ?? "–")}</td>
            <td>${c.policy_version ?? "–"}${c.policy_version_end && c.policy_version_end !== c.policy_version ? html` → <b class="version">${c.policy_version_end}</b>` : ""}</td>
            <td>${c.trace != null ? html`<a href=${traceHref(c.trace)}>${c.trace}</a>` : html`<span class="muted">none</span>`}</td>
            <td>${c.images.length > 0 ? html`<${Screen} hash=${c.images.at(-1)} count=${c.images.length} />` : ""}</td>
          </tr>`
            : html`<tr class="failed"><td>${i + 1}</td><td colspan="11"><code>${c.key}</code>: ${c.error}</td></tr>`,
        )}</tbody>
      </table>
    </section>
    <section class="panel">
      <h3>Artifacts</h3>
      ${
        data.artifacts.length === 0
          ? html`<p class="muted">none kept</p>`
          : html`<ul data-testid="artifacts">${data.artifacts.map(
              (k) =>
                html`<li><a href=${`${path}/artifact?key=${encodeURIComponent(k)}`} target="_blank" rel="noopener">${k}</a></li>`,
            )}</ul>`
      }
    </section>`;
}
