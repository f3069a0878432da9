/** exactly-once-check as a library: run the checks from a test suite and assert on the report. */
export { runChecks, assertReachable, checkOptions, type Progress } from "./run";
export { toJunit, xmlEscape } from "./junit";
export { formatTable } from "./table";
export { PROFILES, type Profile } from "./profiles";
export { derivePayload, readCount, reordered } from "./target";
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
} from "./types";
