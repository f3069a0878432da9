/** exactly-once-check as a library: run the checks from a test suite and assert on the report. */
export { runChecks, assertReachable, checkOptions, type Progress } from "./run.js";
export { toJunit, xmlEscape } from "./junit.js";
export { formatTable } from "./table.js";
export { PROFILES, type Profile } from "./profiles.js";
export { derivePayload, readCount, reordered } from "./target.js";
export {
  CHECKS,
  FailureKind,
  PROFILE_NAMES,
  SetupError,
  UsageError,
  Verdict,
  type CheckName,
  type CheckOptions,
  type CheckResult,
  type CountScope,
  type Exchange,
  type Finding,
  type Header,
  type ProfileName,
  type Report,
} from "./types.js";
