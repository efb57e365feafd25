import { notBuilt } from "../not-built.ts";

export default notBuilt(
  "token",
  "mint a session token for a hosted harness",
  "Usage: polar token --session S --task T [--ttl 3600]",
);
