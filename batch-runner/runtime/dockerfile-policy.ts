/**
 * What a Dockerfile the runner builds may hold: the instructions and flags that cannot name a host
 * path, a host network or a privilege (image-build.ts refuses the rest before any engine command;
 * `polar import-harbor` refuses it at import). An allowlist: an instruction, flag or directive
 * not listed here is refused, naming its line, why, and what to write instead.
 *
 * The engines this guards have had host escapes reachable only through such forms: podman 4.3 /
 * buildah 1.28 resolve a `RUN --mount=type=bind,from=<stage>,source=<link to />` on the host
 * (CVE-2024-1753), a cache mount's `id` walks out of the cache dir (CVE-2024-9675), a mount's
 * options reach the host's mount table (CVE-2024-9407). None of these is reachable here.
 *
 * The lines are split as BuildKit and buildah's parser split them (`dockerfileInstructions`), so
 * no line is an instruction to the builder that is not one here: a `\` then only spaces or tabs
 * continues a line, a comment or blank line inside a continuation is skipped, the parts are joined
 * as they are. Anything that would let the two disagree is refused instead of modelled: an
 * `escape` directive, a `syntax` directive naming another frontend, heredocs (BuildKit reads their
 * lines as data, buildah 1.28 as instructions), keywords that are not plain ASCII words, flags
 * with quotes, escapes or characters outside a plain set.
 */

export interface DockerfileInstruction {
  /** 1-based line of the instruction's first line. */
  line: number;
  /** Upper-cased. */
  keyword: string;
  /** Everything after the keyword, flags included, trimmed. */
  args: string;
}

/** Go's unicode.IsSpace, which BuildKit and buildah trim lines with (not JS's \s: it has U+FEFF, lacks U+0085). */
const GO_SPACE = "\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const LEADING_SPACE = new RegExp(`^[${GO_SPACE}]+`);
const TRAILING_SPACE = new RegExp(`[${GO_SPACE}]+$`);
const CONTINUATION = /\\[ \t]*$/;
/** What splits the keyword from its arguments in BuildKit (`reWhitespace`). */
const KEYWORD_SPLIT = /[\t\v\f\r ]+/;

function isComment(raw: string): boolean {
  return raw
    .replace(/[\r\n]+$/, "")
    .replace(LEADING_SPACE, "")
    .startsWith("#");
}

function isBlank(raw: string): boolean {
  return raw.replace(/[\r\n]+$/, "").replace(LEADING_SPACE, "") === "";
}

/** The instructions as the builder reads them (default escape `\`; `dockerfileRefusals` refuses any other). */
export function dockerfileInstructions(text: string): DockerfileInstruction[] {
  const lines = text.replace(/^\uFEFF/, "").split("\n");
  const out: DockerfileInstruction[] = [];
  let i = 0;
  while (i < lines.length) {
    const start = i;
    const first = (lines[i++] as string).replace(/[\r\n]+$/, "").replace(LEADING_SPACE, "");
    if (first.startsWith("#")) continue;
    let ended = !CONTINUATION.test(first);
    let buf = first.replace(CONTINUATION, "");
    if (ended && buf === "") continue;
    while (!ended && i < lines.length) {
      const raw = lines[i++] as string;
      if (isComment(raw) || isBlank(raw)) continue;
      const part = raw.replace(/[\r\n]+$/, "");
      ended = !CONTINUATION.test(part);
      buf += part.replace(CONTINUATION, "");
    }
    const line = buf.replace(LEADING_SPACE, "").replace(TRAILING_SPACE, "");
    if (line === "") continue;
    const split = KEYWORD_SPLIT.exec(line);
    const keyword = split ? line.slice(0, split.index) : line;
    const args = split ? line.slice(split.index + split[0].length) : "";
    // Only an ASCII keyword is upper-cased: JS maps "ı" to "I", Go's ToLower maps "K" (Kelvin) to "k".
    const upper = /^[A-Za-z]+$/.test(keyword) ? keyword.toUpperCase() : keyword;
    out.push({ line: start + 1, keyword: upper, args: args.replace(TRAILING_SPACE, "") });
  }
  return out;
}

/** A parser directive as BuildKit's regex has it, or anything near it (JS's \s is wider than RE2's). */
const DIRECTIVE = /^[\s\uFEFF\u0085]*#\s*([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.*?)\s*$/;
/** The frontends whose parser is BuildKit's own: the official ones, by version (not `-labs`). */
const OFFICIAL_SYNTAX = /^(docker\.io\/)?docker\/dockerfile:1(\.\d+){0,2}(@sha256:[0-9a-f]{64})?$/;

/** The `syntax` and `escape` directives anywhere in the file (a comment past the top is refused too: no guessing where they stop). */
function directiveRefusals(text: string): string[] {
  const out: string[] = [];
  text
    .replace(/^\uFEFF/, "")
    .split("\n")
    .forEach((raw, i) => {
      const m = DIRECTIVE.exec(raw.replace(/\r+$/, ""));
      if (!m) return;
      const name = (m[1] as string).toLowerCase();
      const value = m[2] as string;
      if (name === "escape" && value !== "\\")
        out.push(
          `line ${i + 1}: the escape=${value} parser directive is refused (it changes how lines continue, where the runner's reading and the builder's could part); remove it and continue lines with \\`,
        );
      if (name === "syntax" && !OFFICIAL_SYNTAX.test(value))
        out.push(
          `line ${i + 1}: the syntax=${value} parser directive is refused (a frontend image other than docker/dockerfile:1 would parse and run this file its own way); remove it`,
        );
    });
  return out;
}

type FlagRule = (value: string | null, ctx: Context) => string | null;

interface Context {
  /** Stage names (lower-cased) and indexes defined so far. */
  stages: Set<string>;
}

/**
 * containers/image transports: `FROM dir:/x` or `COPY --from=oci-archive:/x` makes buildah read a
 * host path as an image (its `TransportFromImageName` looks at the text before the first colon).
 */
const TRANSPORTS = new Set([
  "atomic",
  "containers-storage",
  "dir",
  "docker",
  "docker-archive",
  "docker-daemon",
  "oci",
  "oci-archive",
  "ostree",
  "sif",
  "tarball",
]);
/** An image reference: [registry[:port]/]path[:tag][@digest], lower-case path, no variables. */
const IMAGE_REF =
  /^(?:[A-Za-z0-9.-]+(?::\d+)?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$/;

/** Why `ref` cannot be a base or `--from` image, or null. */
function imageRefusal(ref: string, ctx: Context): string | null {
  if (ctx.stages.has(ref.toLowerCase())) return null;
  if (ref.includes("$"))
    return `${ref} holds a variable, which the runner cannot check; name the image or stage itself`;
  const colon = ref.indexOf(":");
  if (colon > 0 && TRANSPORTS.has(ref.slice(0, colon)))
    return `${ref} names a ${ref.slice(0, colon)}: transport, which reads the image from the host; name an image in a registry or the engine's store (POLAR_BASE_IMAGES maps a FROM to a local image)`;
  if (!IMAGE_REF.test(ref)) return `${ref} is not an image reference or an earlier stage's name`;
  return null;
}

/** A heredoc's start as any builder could read one (`<<EOF`, `<<-"EOF"`, `<< EOF`); `$((1 << 2))` is not. */
const HEREDOC = /<<-?\s*["']?[A-Za-z_]/;

/** A flag's whole text (`--name=value`): plain characters only, so every parser splits it the same. */
const PLAIN_FLAG = /^--[a-z][a-z-]*(=[A-Za-z0-9._:/@+,=${}-]*)?$/;

const anyValue: FlagRule = (v) => (v === null || v === "" ? "needs a value" : null);
const noValueOrBool: FlagRule = (v) =>
  v === null || v === "true" || v === "false" ? null : "takes true or false";

const COPY_FLAGS: Record<string, FlagRule> = {
  chown: anyValue,
  chmod: (v) => (v !== null && /^[0-7]{3,4}$/.test(v) ? null : "takes an octal mode"),
  link: noValueOrBool,
  from: (v, ctx) => (v === null || v === "" ? "needs a stage or image" : imageRefusal(v, ctx)),
};
const ADD_FLAGS: Record<string, FlagRule> = {
  chown: COPY_FLAGS.chown as FlagRule,
  chmod: COPY_FLAGS.chmod as FlagRule,
  link: noValueOrBool,
};

/** Per instruction: the flags it may carry. Keywords not here are refused. */
const INSTRUCTIONS: Record<string, Record<string, FlagRule>> = {
  FROM: { platform: anyValue },
  RUN: {
    network: (v) =>
      v === "none" || v === "default" ? null : "may only be none or default (the build's own network)",
  },
  COPY: COPY_FLAGS,
  ADD: ADD_FLAGS,
  WORKDIR: {},
  ENV: {},
  ARG: {},
  LABEL: {},
  USER: {},
  EXPOSE: {},
  ENTRYPOINT: {},
  CMD: {},
  VOLUME: {},
  STOPSIGNAL: {},
  SHELL: {},
  MAINTAINER: {},
  HEALTHCHECK: {
    interval: anyValue,
    timeout: anyValue,
    "start-period": anyValue,
    "start-interval": anyValue,
    retries: anyValue,
  },
  ONBUILD: {},
};

/** What to write instead of a refused flag, where there is an answer. */
const INSTEAD: Record<string, string> = {
  "RUN --mount":
    "drop the mount: COPY what the step reads into the image (from the build context, or COPY --from an earlier stage) and remove caches in the same RUN",
  "RUN --security": "drop the flag: a build step runs with the build container's own privileges",
  "RUN --device": "drop the flag: a build step gets no host device",
  "COPY --parents": "COPY each directory to its own destination",
  "COPY --exclude": "list what to copy, or use .dockerignore",
  "ADD --checksum": "download in a RUN step and check the sum there",
  "ADD --keep-git-dir": "clone in a RUN step",
};

/** `[--flag=v ...] rest`: the leading words that start with `--` (split on ASCII blanks, as Go's flag reader stops at the first other word). */
function splitFlags(args: string): { flags: string[]; rest: string } {
  const flags: string[] = [];
  let rest = args;
  for (;;) {
    const m = /^(--[^ \t\v\f\r]*)(?:[ \t\v\f\r]+|$)/.exec(rest);
    if (!m) return { flags, rest };
    flags.push(m[1] as string);
    rest = rest.slice(m[0].length);
  }
}

/** ADD's sources: every word but the last (JSON form or not); a URL or git source is fetched by the engine from the host. */
function addSources(rest: string): string[] {
  if (rest.startsWith("[")) {
    try {
      const list = JSON.parse(rest);
      if (Array.isArray(list)) return list.slice(0, -1).map(String);
    } catch {
      // Not JSON: the builder reads it as the shell form, and so do we.
    }
  }
  return rest.split(/\s+/).slice(0, -1);
}

/** Why one of `flags` may not be on `keyword`, or null. */
function flagRefusal(keyword: string, flags: string[], at: string, ctx: Context): string | null {
  const allowed = INSTRUCTIONS[keyword] as Record<string, FlagRule>;
  for (const flag of flags) {
    const name = /^--([^=]*)/.exec(flag)?.[1] ?? "";
    const value = flag.includes("=") ? flag.slice(flag.indexOf("=") + 1) : null;
    if (!Object.hasOwn(allowed, name)) {
      const instead = INSTEAD[`${keyword} --${name}`];
      const why =
        name === "mount"
          ? "a build mount can reach host paths (podman 4.3 / buildah 1.28 resolve a bind mount's source on the host, CVE-2024-1753; a cache id walks out of the cache dir, CVE-2024-9675)"
          : "not a flag the runner lets a build use";
      return `${at} ${flag.split("=")[0]}: refused: ${why}${instead ? `; ${instead}` : ""}`;
    }
    if (!PLAIN_FLAG.test(flag))
      return `${at} ${flag}: a flag may hold only letters, digits and ._:/@+,=\${}- (no quotes, escapes or other characters, which builders read differently)`;
    const why = (allowed[name] as FlagRule)(value, ctx);
    if (why) return `${at} --${name}: ${why}`;
  }
  return null;
}

function instructionRefusal(ins: DockerfileInstruction, ctx: Context, inOnbuild: boolean): string | null {
  const { keyword, args } = ins;
  const at = `line ${ins.line}: ${keyword}`;
  if (!/^[A-Z]+$/.test(keyword) || !Object.hasOwn(INSTRUCTIONS, keyword))
    return `line ${ins.line}: ${JSON.stringify(keyword)} is not an instruction the runner builds (FROM, RUN, COPY, ADD, WORKDIR, ENV, ARG, LABEL, USER, EXPOSE, ENTRYPOINT, CMD, VOLUME, STOPSIGNAL, SHELL, HEALTHCHECK, ONBUILD, MAINTAINER)`;
  if (LEADING_SPACE.test(args))
    return `${at}: its arguments start with a Unicode space, which builders read differently; use an ASCII space`;
  const { flags, rest } = splitFlags(args);
  const bad = flagRefusal(keyword, flags, at, ctx);
  if (bad) return bad;
  if (["RUN", "COPY", "ADD", "ONBUILD"].includes(keyword) && HEREDOC.test(rest))
    return `${at}: "<<" (a heredoc) is refused: BuildKit reads the lines after it as a file, older builders as instructions; COPY a file from the build context, or write it with printf in a one-line RUN`;
  if (keyword === "ADD")
    for (const src of addSources(rest))
      if (
        /^[a-z][a-z0-9+.-]*:\/\//i.test(src) ||
        /^(git@|github\.com\/)/.test(src) ||
        /\.git(#.*)?$/.test(src)
      )
        return `${at} ${src}: a remote source is fetched by the engine on the host (its loopback and metadata addresses included); download it in a RUN step, which runs inside the build container`;
  if (keyword === "FROM") {
    if (inOnbuild) return `${at}: not allowed in ONBUILD`;
    const words = rest.split(/\s+/);
    const image = words[0] ?? "";
    if (image === "") return `${at}: names no image`;
    if (image !== "scratch") {
      const why = imageRefusal(image, ctx);
      if (why) return `${at} ${why}`;
    }
    if (words.length !== 1 && !(words.length === 3 && (words[1] as string).toUpperCase() === "AS"))
      return `${at} ${rest}: expected FROM image [AS name]`;
  }
  if (keyword === "ONBUILD") {
    if (inOnbuild) return `${at}: ONBUILD ONBUILD is not allowed`;
    const inner = dockerfileInstructions(rest)[0];
    if (!inner) return `${at}: names no instruction`;
    return instructionRefusal({ ...inner, line: ins.line }, ctx, true);
  }
  return null;
}

/**
 * Flags on any physical line that starts like an instruction, read on its own: were some
 * builder to join or split lines otherwise than `dockerfileInstructions` (a blank line inside a
 * continuation, say), a line it reads as an instruction still has only allowed flags.
 */
function physicalLineRefusals(text: string, ctx: Context): string[] {
  const out: string[] = [];
  text
    .replace(/^\uFEFF/, "")
    .split("\n")
    .forEach((raw, i) => {
      const line = raw
        .replace(/[\r\n]+$/, "")
        .replace(LEADING_SPACE, "")
        .replace(CONTINUATION, "");
      const m = /^([A-Za-z]+)[\t\v\f\r ]+(--.*)$/.exec(line);
      const keyword = m?.[1]?.toUpperCase() ?? "";
      if (!m || !Object.hasOwn(INSTRUCTIONS, keyword)) return;
      const why = flagRefusal(keyword, splitFlags(m[2] as string).flags, `line ${i + 1}: ${keyword}`, ctx);
      if (why) out.push(why);
    });
  return out;
}

/**
 * Every reason the runner will not build `text` (empty: it may). Each names its line, why, and
 * what to write instead.
 */
export function dockerfileRefusals(text: string): string[] {
  const out = directiveRefusals(text);
  const ctx: Context = { stages: new Set() };
  let index = 0;
  for (const ins of dockerfileInstructions(text)) {
    const why = instructionRefusal(ins, ctx, false);
    if (why) out.push(why);
    if (ins.keyword === "FROM") {
      const words = splitFlags(ins.args).rest.split(/\s+/);
      // A stage is known by its index and name from the next instruction on.
      ctx.stages.add(String(index++));
      if (words.length === 3) ctx.stages.add((words[2] as string).toLowerCase());
    }
  }
  // Read with every stage known, so a --from naming a later stage is refused only by the proper read.
  for (const why of physicalLineRefusals(text, ctx))
    if (!out.some((o) => o.startsWith(`${why.split(":")[0]}:`))) out.push(why);
  return out;
}

/** `dockerfileRefusals` of the file's bytes: not UTF-8 is refused (a stray byte is a space to Go's flag reader, not to ours). */
export function dockerfileBytesRefusals(bytes: Uint8Array): string[] {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return ["the Dockerfile is not UTF-8 text, which builders and the runner could read differently"];
  }
  return dockerfileRefusals(text);
}

/** The images the Dockerfile's FROMs name (not earlier stages, not scratch): whose ONBUILD triggers a build runs. */
export function baseImagesOf(text: string): { line: number; image: string }[] {
  const stages = new Set<string>();
  const out: { line: number; image: string }[] = [];
  for (const ins of dockerfileInstructions(text)) {
    if (ins.keyword !== "FROM") continue;
    const words = splitFlags(ins.args).rest.split(/\s+/);
    const image = words[0] ?? "";
    if (image !== "scratch" && !stages.has(image.toLowerCase())) out.push({ line: ins.line, image });
    stages.add(String(stages.size));
    if (words.length === 3) stages.add((words[2] as string).toLowerCase());
  }
  return out;
}

/** Why each of a base image's ONBUILD triggers (which run in a build FROM it) may not, or []. */
export function onbuildRefusals(triggers: string[]): string[] {
  const out: string[] = [];
  for (const trigger of triggers) {
    const ins = dockerfileInstructions(trigger);
    const why =
      ins.length !== 1
        ? "not one instruction"
        : instructionRefusal({ ...(ins[0] as DockerfileInstruction), line: 0 }, { stages: new Set() }, true);
    if (why) out.push(`ONBUILD ${trigger}: ${why.replace(/^line 0: /, "")}`);
  }
  return out;
}
