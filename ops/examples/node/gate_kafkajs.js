// A Node orchestrator on the persona-drift wire protocol, with kafkajs: publish a draft, await its verdict,
// send the retry the gate asks for, and print what is committed. Every payload it sends and every verdict it
// reads is validated against the JSON Schemas in schemas/topics/ (ajv, draft 2020-12): the protocol is
// language-neutral, nothing here comes from the Python SDK.
//
//   cd ops/examples/node && npm install          # kafkajs, ajv, ajv-formats (package.json)
//   node gate_kafkajs.js --broker 127.0.0.1:9092 --prefix drift. --agent dwight \
//        --text "As an AI assistant, I'd be happy to help." --retry-text "Bears. Beets. Battlestar Galactica."
//
// Exit code 0 when the gate committed or refused the draft, 1 on a timeout or a payload that breaks its schema.
// Measured on the embedded broker (Tansu): a kafkajs consumer's JoinGroup waits for its rebalanceTimeout (3 s
// here, 60 s by default), so drafts are sent only once the consumer has joined and fetched (its GROUP_JOIN and
// first FETCH events): a verdict produced before its start offsets exist would be skipped, as the consumer
// starts from the end of the topic.
"use strict";

const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const { Kafka, Partitioners, logLevel } = require("kafkajs");
const Ajv2020 = require("ajv/dist/2020").default;
const addFormats = require("ajv-formats").default;

function parseArgs(argv) {
  const args = {
    broker: process.env.DRIFT_BROKER || "127.0.0.1:9092",
    prefix: process.env.DRIFT_TOPIC_PREFIX || "drift.",
    agent: "dwight",
    text: "As an AI assistant, I'd be happy to help you plan the party.",
    retryText: "Bears. Beets. The party committee answers to me, and only to me.",
    schemas: path.join(__dirname, "..", "..", "..", "schemas", "topics"),
    timeout: 60,
  };
  for (let i = 2; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, "").replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!(key in args)) throw new Error(`unknown option ${argv[i]}`);
    args[key] = key === "timeout" ? Number(argv[i + 1]) : argv[i + 1];
  }
  return args;
}

function validators(dir) {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  const load = (topic) => ajv.compile(JSON.parse(fs.readFileSync(path.join(dir, `${topic}.schema.json`), "utf8")));
  const check = (validate, topic) => (value) => {
    if (!validate(value)) throw new Error(`${topic} payload breaks its schema: ${ajv.errorsText(validate.errors)}`);
    return value;
  };
  return { draft: check(load("drafts"), "drafts"), verdict: check(load("verdicts"), "verdicts") };
}

async function main() {
  const args = parseArgs(process.argv);
  const valid = validators(args.schemas);
  const kafka = new Kafka({ clientId: "drift-node-example", brokers: [args.broker], logLevel: logLevel.ERROR });
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  const groupId = `drift-node-example-${crypto.randomUUID()}`;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100, sessionTimeout: 6000, rebalanceTimeout: 3000,
                                    heartbeatInterval: 1000 });
  const waiting = new Map(); // `${draft_id}#${attempt}` -> resolve
  // Ready once it has joined and finished a first fetch: its start offsets (the end of the topic) are resolved.
  const joined = new Promise((resolve) => consumer.on(consumer.events.GROUP_JOIN, resolve));
  const fetched = new Promise((resolve) => consumer.on(consumer.events.FETCH, resolve));
  const timer = setTimeout(() => {
    console.error(`gate_kafkajs: no verdict within ${args.timeout}s`);
    process.exit(1);
  }, args.timeout * 1000);

  await producer.connect();
  await consumer.connect();
  await consumer.subscribe({ topic: `${args.prefix}verdicts`, fromBeginning: false });
  await consumer.run({
    eachMessage: async ({ message }) => {
      const verdict = valid.verdict(JSON.parse(message.value.toString("utf8")));
      const resolve = waiting.get(`${verdict.draft_id}#${verdict.attempt}`);
      if (resolve) resolve(verdict);
    },
  });
  await joined;
  await fetched;
  console.log("consumer joined");

  const draftId = crypto.randomUUID();
  const ask = async (attempt, text) => {
    const draft = valid.draft({ draft_id: draftId, attempt, agent_id: args.agent, text, channel: "node-example",
                                sent_at: new Date().toISOString() });
    const reply = new Promise((resolve) => waiting.set(`${draftId}#${attempt}`, resolve));
    await producer.send({ topic: `${args.prefix}drafts`, messages: [{ key: args.agent, value: JSON.stringify(draft) }] });
    const verdict = await reply;
    console.log(`verdict: ${verdict.decision}/${verdict.outcome} attempt ${verdict.attempt} (judge ${verdict.judge})`);
    return verdict;
  };

  let verdict = await ask(1, args.text);
  if (verdict.decision === "retry") {
    console.log(`feedback: ${(verdict.feedback || "").split("\n")[0]}`);
    verdict = await ask(2, args.retryText);
  }
  console.log(verdict.decision === "commit" ? `committed: ${verdict.text}` : `not committed: ${verdict.decision}`);
  clearTimeout(timer);
  await Promise.all([consumer.disconnect(), producer.disconnect()]);
}

main().catch((error) => {
  console.error(`gate_kafkajs: ${error.message}`);
  process.exit(1);
});
