import { useApi } from "./api.js";
import { Crumbs, Loading, ms, reward, Status } from "./format.js";
import { html } from "./html.js";
import { RewardByVersion } from "./reward-by-version.js";

const STAGES = [
  ["init_ms", "INIT"],
  ["ready_wait_ms", "READY wait"],
  ["run_ms", "RUNNING"],
  ["postrun_ms", "POSTRUN"],
];

export function TasksPage() {
  const { data, error } = useApi("api/tasks");
  if (!data) return html`<${Crumbs} /><${Loading} error=${error} />`;
  return html`
    <${Crumbs} />
    <h1>Tasks <small>${data.store}</small></h1>
    ${data.tasks.length === 0 && html`<p>No tasks in this store yet.</p>`}
    <${RewardByVersion} tasks=${data.tasks} />
    <div class="cards">
      ${data.tasks.map(
        (
          t,
        ) => html`<a class="card" href="#/task/${encodeURIComponent(t.task_id)}" data-testid="task-card" data-task=${t.task_id}>
          <h2>${t.task_id} <${TaskState} state=${t.state} /></h2>
          <${StatusCounts} statuses=${t.statuses} />
          <p>${t.sessions.length} sessions · mean reward ${reward(t.mean_reward)}</p>
          <${Histogram} bars=${t.histogram} small />
        </a>`,
      )}
    </div>`;
}

export function TaskPage({ task }) {
  const { data, error } = useApi(`api/tasks/${encodeURIComponent(task)}`);
  if (!data) return html`<${Crumbs} task=${task} /><${Loading} error=${error} />`;
  return html`
    <${Crumbs} task=${task} />
    <h1>${task} <${TaskState} state=${data.state} /></h1>
    <section class="row">
      <div class="panel">
        <h3>Sessions by status</h3>
        <${StatusCounts} statuses=${data.statuses} />
        <p>${data.sessions.length} sessions · mean reward ${reward(data.mean_reward)}</p>
      </div>
      <div class="panel">
        <h3>Reward histogram <small>(group ${task})</small></h3>
        <${Histogram} bars=${data.histogram} />
      </div>
    </section>
    <section class="panel">
      <h3>Timeline <small>per session, from its start (finished_at minus the stages)</small></h3>
      <${Timeline} sessions=${data.sessions} />
    </section>
    ${
      data.definition &&
      html`<details class="panel"><summary>TaskRequest <small class="muted">tasks/${task}.json</small></summary>
        <pre class="json" data-testid="task-definition">${JSON.stringify(data.definition, null, 2)}</pre></details>`
    }
    ${
      data.bad.length > 0 &&
      html`<section class="panel error"><h3>Unreadable results</h3>
      <ul>${data.bad.map((b) => html`<li><code>${b.key}</code>: ${b.error}</li>`)}</ul></section>`
    }
    <section class="panel">
      <h3>Sessions</h3>
      <table data-testid="sessions">
        <thead><tr><th>session</th><th>sample</th><th>attempt</th><th>status</th><th>reward</th><th>traces</th><th>tokens</th><th>trainable</th><th>flags</th><th>total time</th></tr></thead>
        <tbody>
          ${data.sessions.map(
            (s) => html`<tr>
              <td><a href="#/task/${encodeURIComponent(task)}/session/${encodeURIComponent(s.session_id)}" data-testid="session-link">${s.session_id}</a></td>
              <td>${s.sample_index}</td><td>${s.attempt}</td><td><${Status} status=${s.status} /></td>
              <td>${reward(s.reward)}</td><td>${s.traces}</td><td>${s.tokens}</td><td>${s.trainable}</td>
              <td>${s.breaks > 0 && html`<span class="badge break">${s.breaks} break${s.breaks > 1 ? "s" : ""}</span>`}
                  ${s.orphans > 0 && html`<span class="badge orphan">${s.orphans} orphan${s.orphans > 1 ? "s" : ""}</span>`}
                  ${s.error && html`<span class="badge err" title=${s.error}>error</span>`}</td>
              <td>${ms(total(s.timings))}</td>
            </tr>`,
          )}
        </tbody>
      </table>
    </section>`;
}

/** The task's state as the control API names it: a cancelled task is never shown as completed. */
function TaskState({ state }) {
  return html`<span class=${`task-state t-${state}`} data-testid="task-state" data-state=${state}>${state}</span>`;
}

function StatusCounts({ statuses }) {
  const entries = Object.entries(statuses);
  return html`<p class="statuses" data-testid="statuses">
    ${entries.length === 0 ? "no results yet" : entries.map(([s, n]) => html`<span data-status=${s} data-count=${n}><${Status} status=${s} /> ${n}</span> `)}
  </p>`;
}

/** One bar per reward value (or bin); each bar carries its label and count for reading back. */
export function Histogram({ bars, small }) {
  const max = Math.max(1, ...bars.map((b) => b.count));
  if (bars.length === 0) return html`<p class="muted">no rewards</p>`;
  return html`<div class=${`histogram${small ? " small" : ""}`} data-testid="histogram">
    ${bars.map(
      (
        b,
      ) => html`<div class="hbar" data-label=${b.label} data-count=${b.count} title=${`reward ${b.label}: ${b.count}`}>
        <span class="count">${b.count}</span>
        <span class="area"><span class="fill" style=${{ height: `${(100 * b.count) / max}%` }}></span></span>
        <span class="label">${b.label}</span>
      </div>`,
    )}
  </div>`;
}

function total(t) {
  const parts = STAGES.map(([k]) => t[k]).filter((v) => v != null);
  return parts.length ? parts.reduce((a, b) => a + b, 0) : null;
}

/** Gantt-style: each session's stages laid end to end from its start, on a shared time axis. */
function Timeline({ sessions }) {
  const rows = sessions.map((s) => {
    const dur = total(s.timings) ?? 0;
    const end = Date.parse(s.timings.finished_at);
    return { s, start: end - dur, end };
  });
  if (rows.length === 0) return html`<p class="muted">no sessions</p>`;
  const t0 = Math.min(...rows.map((r) => r.start));
  const span = Math.max(1, Math.max(...rows.map((r) => r.end)) - t0);
  return html`<div class="timeline" data-testid="timeline">
    <div class="legend">${STAGES.map(([k, label]) => html`<span><i class=${`stage ${k}`}></i>${label}</span>`)}</div>
    ${rows.map(({ s, start }) => {
      let at = start;
      return html`<div class="trow">
        <span class="tlabel">${s.session_id}</span>
        <div class="track">
          ${STAGES.map(([k, label]) => {
            const v = s.timings[k];
            if (v == null) return null;
            const left = ((at - t0) / span) * 100;
            at += v;
            return html`<span class=${`stage ${k}`} data-stage=${label} style=${{ left: `${left}%`, width: `max(2px, ${(v / span) * 100}%)` }}
              title=${`${label}: ${ms(v)}`}></span>`;
          })}
        </div>
        <span class="tdur">${ms(total(s.timings))}</span>
      </div>`;
    })}
    <div class="axis"><span>0</span><span>${ms(span)}</span></div>
  </div>`;
}
