// promptfoo 0.123.1 loads npm `natural` with `await import("natural")`, which gives a CommonJS
// package's exports only under `default`: its `meteor` assertion then always fails with
// "Invariant failed: PorterStemmer should be loaded". This hook hands it natural's exports by name,
// so promptfoo's own METEOR code runs as written, for the parity cases in this folder:
//   NODE_OPTIONS="--import=$PWD/bench/parity/meteor/natural_hook.mjs" python bench/parity.py bench/parity/meteor
import { registerHooks } from 'node:module';

const wrapper = new URL('./natural_named.mjs', import.meta.url).href;
registerHooks({
  resolve(specifier, context, next) {
    if (specifier !== 'natural' || context.conditions.includes('require')) return next(specifier, context);
    const real = next(specifier, { ...context, conditions: ['node', 'require'] }).url;
    return { url: `${wrapper}?of=${encodeURIComponent(real)}`, shortCircuit: true };
  },
});
