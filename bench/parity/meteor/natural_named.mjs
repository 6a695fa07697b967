// npm `natural` (CommonJS) with its exports by name: see natural_hook.mjs.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const natural = createRequire(import.meta.url)(fileURLToPath(new URL(import.meta.url).searchParams.get('of')));
export const PorterStemmer = natural.PorterStemmer;
export const WordNet = natural.WordNet;
export default natural;
