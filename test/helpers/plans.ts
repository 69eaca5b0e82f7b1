// The plan table most tests run on: the example video service's (free, starter, pro,
// business), so that the library and the example service are tested on the same numbers.
export { EXAMPLE_PLANS } from '../../examples/shared/plans.ts';
