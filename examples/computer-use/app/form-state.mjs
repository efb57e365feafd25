/**
 * The form app's state, as one pure function of its seed and the events it received: the server
 * applies each event as it comes, and the judge replays the recorded events over its own copy of
 * the seed, so a reward never rests on a state file the agent could have written.
 */

/** The seed (`.app/seed.json`, written by the task's prepare steps): the form and its first values. */
export function parseSeed(text) {
  const seed = JSON.parse(text);
  if (typeof seed.title !== "string" || !Array.isArray(seed.fields) || seed.fields.length === 0) {
    throw new Error("seed: needs a title and a non-empty fields list");
  }
  for (const field of seed.fields) {
    if (!/^[a-z][a-z0-9_]*$/.test(field.name ?? ""))
      throw new Error(`seed: bad field name ${JSON.stringify(field.name)}`);
    if (!["text", "checkbox", "select"].includes(field.type)) {
      throw new Error(`seed: field ${field.name} has an unknown type ${JSON.stringify(field.type)}`);
    }
    if (field.type === "select" && !(Array.isArray(field.options) && field.options.length > 0)) {
      throw new Error(`seed: select field ${field.name} needs options`);
    }
  }
  return seed;
}

export function initialState(seed) {
  return {
    values: Object.fromEntries(
      seed.fields.map((f) => [
        f.name,
        f.value ?? (f.type === "checkbox" ? false : f.type === "select" ? f.options[0] : ""),
      ]),
    ),
    saves: 0,
  };
}

/**
 * One event: `{type: "save", values}`. Values of unknown fields, of the wrong type or outside a
 * select's options are refused (the state stays), as the real app would refuse them.
 */
export function applyEvent(seed, state, event) {
  if (event?.type !== "save" || typeof event.values !== "object" || event.values === null) {
    return { state, error: "unknown event" };
  }
  const next = { ...state.values };
  for (const [name, value] of Object.entries(event.values)) {
    const field = seed.fields.find((f) => f.name === name);
    if (!field) return { state, error: `no field ${name}` };
    const ok =
      field.type === "checkbox"
        ? typeof value === "boolean"
        : typeof value === "string" &&
          value.length <= 200 &&
          (field.type !== "select" || field.options.includes(value));
    if (!ok) return { state, error: `bad value for ${name}` };
    next[name] = value;
  }
  return { state: { values: next, saves: state.saves + 1 }, error: null };
}

export function replay(seed, events) {
  let state = initialState(seed);
  for (const event of events) state = applyEvent(seed, state, event).state;
  return state;
}
