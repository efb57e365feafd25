import { notBuilt } from "../not-built.ts";

export default notBuilt(
  "reconstruct",
  "build trajectories for sessions no runner ran (hosted harnesses)",
  "Usage: polar reconstruct --task T [--session S] --store DIR|s3://bucket/prefix",
);
