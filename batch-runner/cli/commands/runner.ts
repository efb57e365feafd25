import { notBuilt } from "../not-built.ts";

export default notBuilt(
  "runner",
  "a batch runner",
  "Usage: polar runner --queue memory|SQS_URL --store DIR|s3://bucket/prefix --proxy-url URL",
);
