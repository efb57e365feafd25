// s3rver in its own process so its CPU is not charged to the load generator or the proxy.
// `node bench/support/s3rver-process.ts PORT DIR`; creates bucket `polar-bench`.
import S3rver from "s3rver";

const server = new S3rver({
  port: Number(process.argv[2]),
  address: "127.0.0.1",
  directory: process.argv[3],
  silent: true,
  configureBuckets: [{ name: "polar-bench", configs: [] }],
});
await server.run();
console.log(`listening ${process.argv[2]}`);
