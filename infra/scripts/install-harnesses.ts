// Installs every harness CLI at the version its preset pins into POLAR_HARNESS_CACHE (default
// ~/.cache/polar-harnesses), so sessions never download one during INIT. Used by the Apptainer
// image build; also handy on a GPU node before `polar runner`:
//   POLAR_HARNESS_CACHE=/opt/polar-harnesses node infra/scripts/install-harnesses.ts [name ...]
import { installHarness } from "../../batch-runner/harness/install.ts";
import { harnessPresets } from "../../batch-runner/harness/registry.ts";

const wanted = process.argv.slice(2);
const unknown = wanted.filter((n) => !(n in harnessPresets));
if (unknown.length) {
  console.error(
    `unknown harness(es): ${unknown.join(", ")}; known: ${Object.keys(harnessPresets).join(", ")}`,
  );
  process.exit(2);
}
for (const preset of Object.values(harnessPresets)) {
  if (!preset.npmPackage || (wanted.length && !wanted.includes(preset.name))) continue;
  const installed = await installHarness(preset, { log: (line) => console.error(line) });
  console.log(`${preset.name}: ${preset.npmPackage}@${preset.version} -> ${installed?.binDir}`);
}
