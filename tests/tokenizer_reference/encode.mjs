// The reference encoding of a corpus by transformers.js, from local files only.
//   node encode.mjs MODEL_DIR CORPUS.jsonl
// For each document (a JSON line with a "text" field) prints one JSON line:
// {"with": ids with add_special_tokens=true, "without": ids with add_special_tokens=false}.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { AutoTokenizer, env } from '@huggingface/transformers';

const [modelDir, corpusPath] = process.argv.slice(2);
if (!modelDir || !corpusPath) {
  console.error('usage: node encode.mjs MODEL_DIR CORPUS.jsonl');
  process.exit(2);
}
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.useBrowserCache = false;
env.useFSCache = false;
env.localModelPath = path.dirname(path.resolve(modelDir)) + path.sep;
const tokenizer = await AutoTokenizer.from_pretrained(path.basename(path.resolve(modelDir)), { local_files_only: true });
const lines = readFileSync(corpusPath, 'utf8').split('\n').filter((line) => line.length > 0);
const out = [];
for (const line of lines) {
  const { text } = JSON.parse(line);
  out.push(JSON.stringify({
    with: tokenizer.encode(text, { add_special_tokens: true }),
    without: tokenizer.encode(text, { add_special_tokens: false }),
  }));
}
process.stdout.write(out.join('\n') + '\n');
