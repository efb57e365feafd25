import { notBuilt } from "../not-built.ts";

export default notBuilt(
  "inspect",
  "readable summary of a trajectory or shard, trainable spans marked",
  "Usage: polar inspect FILE",
);
