/**
 * A scripted answer for a computer-use harness has to name page elements by the numbers the
 * harness gave them in this call's page listing (browser-use: `[12]<input id=name ... />`), and
 * those numbers differ from one run to the next. A script writes `{{element:TEXT}}` instead; the
 * policy puts in the number of the first listed element whose line contains TEXT, as a model
 * reading the listing would.
 */

const REF = /\{\{element:([^}]+)\}\}/g;
/** An element line of browser-use's listing: `[N]<tag ...`, after optional markers (`*`, `|SHADOW(open)|`). */
const ELEMENT = /\[(\d+)\]</;

/** `text` with every `{{element:...}}` filled from `page`; a reference with no match is an error. */
export function fillElementRefs(text: string, page: string): { text: string } | { error: string } {
  const lines = page.split("\n");
  const missing: string[] = [];
  const filled = text.replace(REF, (whole, needle: string) => {
    for (const line of lines) {
      const element = ELEMENT.exec(line);
      if (element && line.includes(needle)) return element[1];
    }
    missing.push(needle);
    return whole;
  });
  if (missing.length > 0) {
    return { error: `polar-script: no element on the page matches {{element:${missing[0]}}}` };
  }
  return { text: filled };
}
