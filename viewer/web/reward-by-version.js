import { html } from "./html.js";

/**
 * Reward over policy versions, across every task of the store: one point per version with the
 * mean reward of the sessions it sampled (a session's version is its oldest trace's, the one
 * staleness is counted from). Versions sort as numbers when they all are, else as strings.
 */
export function rewardByVersion(tasks) {
  const by = new Map();
  for (const t of tasks)
    for (const s of t.sessions) {
      if (s.policy_version == null || s.reward == null) continue;
      if (!by.has(s.policy_version)) by.set(s.policy_version, []);
      by.get(s.policy_version).push(s.reward);
    }
  const versions = [...by.keys()];
  const numeric = versions.every((v) => /^-?\d+(\.\d+)?$/.test(v));
  versions.sort(numeric ? (a, b) => Number(a) - Number(b) : undefined);
  return versions.map((v) => {
    const rs = by.get(v);
    return { version: v, sessions: rs.length, mean: rs.reduce((a, b) => a + b, 0) / rs.length, rewards: rs };
  });
}

const W = 640;
const H = 220;
const PAD = { left: 40, right: 12, top: 10, bottom: 28 };

/** An SVG line of mean reward per version, the sessions' rewards as dots; nothing without versions. */
export function RewardByVersion({ tasks }) {
  const points = rewardByVersion(tasks);
  if (points.length === 0) return null;
  const all = points.flatMap((p) => p.rewards);
  const lo = Math.min(0, ...all);
  const hi = Math.max(1, ...all);
  const x = (i) =>
    PAD.left + (W - PAD.left - PAD.right) * (points.length === 1 ? 0.5 : i / (points.length - 1));
  const y = (r) => PAD.top + (H - PAD.top - PAD.bottom) * (1 - (r - lo) / (hi - lo || 1));
  const every = Math.max(1, Math.ceil(points.length / 12));
  return html`<section class="panel" data-testid="reward-by-version">
    <h3>Reward by policy version <small>(mean over the sessions each version sampled; dots: sessions)</small></h3>
    <svg viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="reward by policy version">
      <line x1=${PAD.left} y1=${y(lo)} x2=${W - PAD.right} y2=${y(lo)} stroke="#999" />
      <line x1=${PAD.left} y1=${PAD.top} x2=${PAD.left} y2=${y(lo)} stroke="#999" />
      ${[lo, (lo + hi) / 2, hi].map(
        (r) =>
          html`<text x=${PAD.left - 6} y=${y(r) + 4} text-anchor="end" font-size="11">${Number(r.toFixed(2))}</text>`,
      )}
      ${points.map((p, i) => p.rewards.map((r) => html`<circle cx=${x(i)} cy=${y(r)} r="2" fill="#bbb" />`))}
      <polyline fill="none" stroke="#1f77b4" stroke-width="2" points=${points.map((p, i) => `${x(i)},${y(p.mean)}`).join(" ")} />
      ${points.map(
        (
          p,
          i,
        ) => html`<circle cx=${x(i)} cy=${y(p.mean)} r="3.5" fill="#1f77b4" data-testid="version-point" data-version=${p.version} data-mean=${p.mean}>
          <title>version ${p.version}: mean reward ${Number(p.mean.toFixed(4))} over ${p.sessions} sessions</title></circle>`,
      )}
      ${points.map(
        (p, i) =>
          i % every === 0 &&
          html`<text x=${x(i)} y=${H - 8} text-anchor="middle" font-size="11">${p.version}</text>`,
      )}
    </svg>
  </section>`;
}
