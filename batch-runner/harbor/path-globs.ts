/*
 * Git's `:(glob)` pathspec rules for the globs an evaluator config names (`test_files`,
 * `outputs_denied`, `outputs_replace`), so one glob means the same for swe_patch's diff (git does
 * the matching there) and for the outputs copied to a judge (matched here): `*` and `?` stay inside
 * one path component, a `**` component followed by a slash matches zero or more directories (so
 * `**` + `/conftest.py` matches a conftest.py at the top too), and a trailing slash + `**` matches
 * everything inside.
 */
export function globMatcher(globs: readonly string[]): (path: string) => boolean {
  if (globs.length === 0) return () => false;
  const res = globs.map(globToRegExp);
  return (path) => res.some((re) => re.test(path));
}

function globToRegExp(glob: string): RegExp {
  let out = "";
  let i = 0;
  while (i < glob.length) {
    if (glob.startsWith("**/", i) && (i === 0 || glob[i - 1] === "/")) {
      out += "(?:[^/]*/)*";
      i += 3;
    } else if (glob.startsWith("/**", i) && i + 3 === glob.length) {
      out += "/.*";
      i += 3;
    } else if (glob[i] === "*") {
      out += "[^/]*";
      i++;
    } else if (glob[i] === "?") {
      out += "[^/]";
      i++;
    } else if (glob[i] === "[") {
      const end = glob.indexOf("]", i + 1);
      if (end === -1) {
        out += "\\[";
        i++;
      } else {
        const body = glob
          .slice(i + 1, end)
          .replace(/^!/, "^")
          .replace(/\\/g, "\\\\");
        out += `[${body}]`;
        i = end + 1;
      }
    } else {
      out += glob[i].replace(/[.+^${}()|\\]/g, "\\$&");
      i++;
    }
  }
  return new RegExp(`^${out}$`);
}

/**
 * The globs of `globs` whose file or dir `text` names: some part of a word's path is what the glob
 * matches past its leading and trailing `**` (`/app/Makefile` names `**` + `/Makefile`,
 * `site-packages/x.pth` names `**` + `/*.pth`, `/app/.cargo/config.toml` names `**` + `/.cargo/**`).
 */
export function globsNamedIn(globs: readonly string[], text: string): string[] {
  const words = text.split(/[\s"'`()[\]{},;:<>=|&]+/).filter((w) => w !== "");
  const paths = new Set<string>();
  for (const word of words) {
    // "Create a Makefile." ends a sentence, not a file name.
    const parts = word
      .replace(/[.!?]+$/, "")
      .split("/")
      .filter((p) => p !== "" && p !== "." && p !== "..");
    for (let i = 0; i < parts.length; i++)
      for (let j = i + 1; j <= parts.length; j++) paths.add(parts.slice(i, j).join("/"));
  }
  return globs.filter((glob) => {
    const matches = globMatcher([glob.replace(/^(\*\*\/)+/, "").replace(/\/\*\*$/, "")]);
    for (const path of paths) if (matches(path)) return true;
    return false;
  });
}
