// s3rver in its own process so its CPU is not charged to the load generator or the proxy.
// `node bench/support/s3rver-process.ts`; prints `listening <endpoint>`; bucket `polar-bench`.
import { startS3rver } from "../../test/support/s3rver.ts";

const s3 = await startS3rver({ bucket: "polar-bench" });
console.log(`listening ${s3.endpoint}`);
process.once("SIGTERM", () => s3.stop().then(() => process.exit(0)));
