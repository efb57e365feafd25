// Line charts for BENCHMARKS.md: an SVG drawn here (log-log axes, one line per series), rendered
// to PNG by headless Chromium (test/support/chromium.ts). No plotting library needed.
import { writeFileSync } from "node:fs";
import { chromiumMissing, launchChromium } from "../../test/support/chromium.ts";

export interface Series {
  name: string;
  points: Array<[number, number]>;
}

export interface Chart {
  title: string;
  x: string;
  y: string;
  series: Series[];
}

const W = 720;
const H = 440;
const PAD = { left: 80, right: 190, top: 40, bottom: 60 };
const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"];

function svgOf(chart: Chart): string {
  const all = chart.series.flatMap((s) => s.points).filter(([x, y]) => x > 0 && y > 0);
  const lx = all.map(([x]) => Math.log10(x));
  const ly = all.map(([, y]) => Math.log10(y));
  const [x0, x1] = [Math.floor(Math.min(...lx)), Math.ceil(Math.max(...lx))];
  const [y0, y1] = [Math.floor(Math.min(...ly)), Math.ceil(Math.max(...ly))];
  const px = (x: number) =>
    PAD.left + ((Math.log10(x) - x0) / Math.max(1e-9, x1 - x0)) * (W - PAD.left - PAD.right);
  const py = (y: number) =>
    H - PAD.bottom - ((Math.log10(y) - y0) / Math.max(1e-9, y1 - y0)) * (H - PAD.top - PAD.bottom);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2 - PAD.right / 2 + PAD.left / 2}" y="22" text-anchor="middle" font-size="14">${esc(chart.title)}</text>`,
  ];
  for (let e = x0; e <= x1; e++) {
    const x = px(10 ** e);
    out.push(
      `<line x1="${x}" y1="${PAD.top}" x2="${x}" y2="${H - PAD.bottom}" stroke="#ddd"/>`,
      `<text x="${x}" y="${H - PAD.bottom + 16}" text-anchor="middle">${fmtTick(10 ** e)}</text>`,
    );
  }
  for (let e = y0; e <= y1; e++) {
    const y = py(10 ** e);
    out.push(
      `<line x1="${PAD.left}" y1="${y}" x2="${W - PAD.right}" y2="${y}" stroke="#ddd"/>`,
      `<text x="${PAD.left - 6}" y="${y + 4}" text-anchor="end">${fmtTick(10 ** e)}</text>`,
    );
  }
  out.push(
    `<text x="${(PAD.left + W - PAD.right) / 2}" y="${H - 18}" text-anchor="middle">${esc(chart.x)} (log)</text>`,
    `<text transform="translate(18 ${(PAD.top + H - PAD.bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(chart.y)} (log)</text>`,
  );
  chart.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const pts = s.points.filter(([x, y]) => x > 0 && y > 0);
    out.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(" ")}"/>`,
      ...pts.map(
        ([x, y]) => `<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="3" fill="${color}"/>`,
      ),
      `<rect x="${W - PAD.right + 14}" y="${PAD.top + i * 20}" width="14" height="3" fill="${color}"/>`,
      `<text x="${W - PAD.right + 34}" y="${PAD.top + i * 20 + 5}">${esc(s.name)}</text>`,
    );
  });
  out.push("</svg>");
  return out.join("\n");
}

function fmtTick(v: number): string {
  if (v >= 1e6) return `${v / 1e6}M`;
  if (v >= 1e3) return `${v / 1e3}k`;
  return String(Number(v.toPrecision(3)));
}

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;");
}

/** Writes each chart as a PNG; resolves to the reason when Chromium is missing (then nothing is written). */
export async function writePngs(charts: Array<{ chart: Chart; path: string }>): Promise<string | null> {
  const missing = chromiumMissing();
  if (missing) return missing;
  const browser = await launchChromium({ width: W, height: H });
  try {
    const page = await browser.newPage();
    for (const { chart, path } of charts) {
      await page.setContent(`<html><body style="margin:0">${svgOf(chart)}</body></html>`);
      writeFileSync(path, await page.locator("svg").screenshot({ type: "png" }));
    }
  } finally {
    await browser.close();
  }
  return null;
}
