// `npm start`: the example service on Express (configuration: examples/shared/main.ts).
import { main } from '../shared/main.ts';
import { listenExpress } from './app.ts';

await main('express', listenExpress);
