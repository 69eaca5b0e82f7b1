// `npm run start:koa`: the example service on Koa (configuration: examples/shared/main.ts).
import { main } from '../shared/main.ts';
import { listenKoa } from './app.ts';

await main('koa', listenKoa);
