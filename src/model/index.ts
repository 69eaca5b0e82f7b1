/**
 * The reference model of tollgate's rules (SPEC §3-7), in plain TypeScript with no Redis:
 * `tollgate/model`. The property tests run the same random operations against Redis and
 * against this model and compare the states after every step; host teams can check their
 * own servers against it the same way. Time is always passed in, never read.
 */
export { TollgateModel, type ModelAccount, type ModelJob, type ModelCycle } from "./model.ts";
export { checkInvariants, type InvariantViolation } from "./invariants.ts";
export { accountFromSnapshot } from "./snapshot.ts";
