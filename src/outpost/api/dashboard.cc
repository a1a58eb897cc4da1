#include "outpost/api/dashboard.h"

namespace outpost::api {

const std::string& DashboardHtml() {
  static const std::string* const page = new std::string(R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Outpost</title>
<style>
:root{--bg:#0f1419;--panel:#182029;--line:#2a3440;--text:#e6edf3;--dim:#8b98a5;--ok:#3fb950;
--warn:#d29922;--bad:#f85149;--a:#58a6ff;--b:#f0883e;--c:#a371f7}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--text);
font-family:system-ui,-apple-system,"DejaVu Sans",sans-serif;font-size:14px}
header{display:flex;align-items:center;gap:12px;padding:14px 20px;border-bottom:1px solid var(--line)}
header h1{font-size:18px;margin:0;font-weight:600}#models{color:var(--dim)}
.pill{padding:2px 10px;border-radius:999px;font-weight:600;font-size:12px;text-transform:uppercase}
.ready{background:#12361f;color:var(--ok)}.loading{background:#3a2c0f;color:var(--warn)}
.down{background:#3d1518;color:var(--bad)}
main{padding:16px 20px;display:grid;gap:14px;grid-template-columns:repeat(auto-fit,minmax(150px,1fr))}
.card{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:10px 12px}
.card .k{color:var(--dim);font-size:12px}.card .v{font-size:24px;font-weight:600;margin-top:2px;
font-variant-numeric:tabular-nums}.card .s{color:var(--dim);font-size:12px}
.wide{grid-column:1/-1}.half{grid-column:span 2}
@media (min-width:900px){.half{grid-column:span 3}}
.panel{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:10px 12px;min-width:0}
.panel h2{font-size:13px;color:var(--dim);margin:0 0 6px;font-weight:600;text-transform:uppercase;letter-spacing:.04em}
svg{width:100%;height:auto;display:block}svg text{fill:var(--dim);font-size:10px}
table{width:100%;border-collapse:collapse;font-size:13px}td,th{padding:4px 6px;border-bottom:1px solid var(--line);
text-align:left}th{color:var(--dim);font-weight:500}td.n{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:flex;height:14px;border-radius:4px;overflow:hidden;background:var(--line);margin:6px 0}
.legend span{margin-right:12px;color:var(--dim);font-size:12px}.dot{display:inline-block;width:9px;height:9px;
border-radius:2px;margin-right:4px;vertical-align:middle}
footer{color:var(--dim);font-size:12px;padding:0 20px 16px}
</style></head><body>
<header><h1>Outpost</h1><span id="status" class="pill loading">…</span><span id="models"></span></header>
<main>
<div class="card"><div class="k">Sessions in use</div><div class="v"><span id="sessions-used">–</span> / <span id="sessions-max">–</span></div><div class="s" id="sessions-note"></div></div>
<div class="card"><div class="k">Queue</div><div class="v" id="queued">–</div><div class="s">waiting for a session</div></div>
<div class="card"><div class="k">Tokens/s</div><div class="v" id="tokens-rate">–</div><div class="s"><span id="tokens-total">–</span> generated</div></div>
<div class="card"><div class="k">Time to first token p95</div><div class="v" id="ttft">–</div><div class="s" id="ttft-note">last interval</div></div>
<div class="card"><div class="k">Requests</div><div class="v" id="requests-rate">–</div><div class="s"><span id="requests-total">–</span> since start, <span id="errors-total">–</span> failed</div></div>
<div class="card"><div class="k">Hottest sensor</div><div class="v" id="hottest">–</div><div class="s" id="power">no power sensor</div></div>
<div class="panel half"><h2>Tokens/s, last hour</h2><div id="chart-tokens"></div></div>
<div class="panel half"><h2>Time to first token, last hour</h2><div id="chart-ttft"></div></div>
<div class="panel half"><h2>Sessions and queue, last hour</h2><div id="chart-sessions"></div></div>
<div class="panel half"><h2>Routes since start</h2><div class="bar" id="route-bar"></div><div class="legend" id="route-legend">no routing file: everything is answered here</div>
<h2 style="margin-top:12px">Upstreams</h2><table id="upstreams"><tr><td class="s">none configured</td></tr></table>
<h2 style="margin-top:12px">Uplink</h2><div class="s" id="uplink">not configured</div></div>
<div class="panel half"><h2>Models</h2><table id="model-table"></table></div>
<div class="panel half"><h2>Sensors</h2><table id="sensor-table"><tr><td>no sensors found</td></tr></table></div>
</main>
<footer>Updated <span id="updated">never</span> · refreshes every 2 s · this page needs no internet</footer>
<script>
"use strict";
const $=id=>document.getElementById(id);
const C=["#58a6ff","#f0883e","#a371f7","#3fb950","#f85149"];
function fmt(v,d){if(v===null||v===undefined||!isFinite(v))return"–";
 if(Math.abs(v)>=1e6)return(v/1e6).toFixed(1)+"M";if(Math.abs(v)>=1e4)return(v/1e3).toFixed(1)+"k";
 return Number(v).toFixed(d===undefined?0:d)}
function secs(v){if(v===null||v===undefined)return"–";return v<1?Math.round(v*1000)+" ms":v.toFixed(2)+" s"}
function esc(s){return String(s).replace(/[&<>"]/g,c=>({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;"}[c]))}
function nice(max){if(!(max>0))return[0,1];const raw=max/4,m=Math.pow(10,Math.floor(Math.log10(raw)));
 let step=10*m;for(const f of[1,2,2.5,5]){if(f*m>=raw){step=f*m;break}}
 const t=[];for(let v=0;v<=max+step*1e-9;v+=step)t.push(v);if(t[t.length-1]<max)t.push(t[t.length-1]+step);return t}
function chart(el,pts,series,unit){
 const W=560,H=180,L=44,R=10,T=10,B=22;
 if(!pts.length){el.innerHTML='<div class="s">collecting: the first point comes after one interval</div>';return}
 const t1=pts[pts.length-1].t,t0=Math.min(pts[0].t,t1-60);let max=0;
 for(const s of series)for(const p of pts){const v=s.f(p);if(v!==null&&isFinite(v))max=Math.max(max,v)}
 const ticks=nice(max),ymax=ticks[ticks.length-1]||1;
 const X=t=>L+(t-t0)/(t1-t0||1)*(W-L-R),Y=v=>H-B-v/ymax*(H-T-B);
 let o=`<svg viewBox="0 0 ${W} ${H}" role="img">`;
 for(const v of ticks)o+=`<line x1="${L}" x2="${W-R}" y1="${Y(v)}" y2="${Y(v)}" stroke="#2a3440"/><text x="${L-4}" y="${Y(v)+3}" text-anchor="end">${fmt(v,ymax<5?1:0)}${unit}</text>`;
 const span=t1-t0,inMin=span>=180;for(const f of[0,.25,.5,.75,1]){const t=t0+f*(t1-t0),ago=span*(1-f);
  o+=`<text x="${X(t)}" y="${H-6}" text-anchor="middle">${f==1?"now":"-"+(inMin?Math.round(ago/60)+" min":Math.round(ago)+" s")}</text>`}
 series.forEach((s,k)=>{let d="",pen=false;for(const p of pts){const v=s.f(p);
  if(v===null||!isFinite(v)){pen=false;continue}d+=(pen?"L":"M")+X(p.t).toFixed(1)+","+Y(v).toFixed(1);pen=true}
  o+=`<path d="${d}" fill="none" stroke="${s.c||C[k]}" stroke-width="2"${s.dash?' stroke-dasharray="5 4"':""}/>`;
  if(s.dots)for(const p of pts){const v=s.f(p);if(v!==null&&isFinite(v))o+=`<circle cx="${X(p.t).toFixed(1)}" cy="${Y(v).toFixed(1)}" r="2.5" fill="${s.c||C[k]}"/>`}});
 o+="</svg>";o+='<div class="legend">'+series.map((s,k)=>`<span><i class="dot" style="background:${s.c||C[k]}"></i>${esc(s.name)}</span>`).join("")+"</div>";
 el.innerHTML=o}
async function getJson(u){const r=await fetch(u,{cache:"no-store"});return{status:r.status,body:await r.json()}}
async function tick(){
 let ready,hist;
 try{ready=await getJson("/ready");hist=(await getJson("/dashboard/history")).body}
 catch(e){$("status").className="pill down";$("status").textContent="unreachable";return}
 const st=ready.body.status||"unknown";$("status").textContent=st;
 $("status").className="pill "+(st==="ready"?"ready":"loading");
 const models=ready.body.models||[];
 $("models").textContent=models.map(m=>m.id).join(", ");
 const pts=hist.points||[],last=pts[pts.length-1],cur=hist.current||{};
 let used=0,max=0,q=0;for(const m of models){used+=m.active;max+=m.max_sessions;q+=m.queued}
 if(!models.length&&last){used=last.sessions_used;max=last.sessions_max;q=last.queued}
 $("sessions-used").textContent=used;$("sessions-max").textContent=max;$("queued").textContent=q;
 $("sessions-note").textContent=max?Math.round(100*used/max)+"% busy":"";
 $("tokens-total").textContent=fmt(cur.tokens_total);$("requests-total").textContent=fmt(cur.requests_total);
 $("errors-total").textContent=fmt(cur.errors_total);
 $("tokens-rate").textContent=last?fmt(last.tokens_per_s,1):"–";
 $("requests-rate").textContent=last?fmt(last.requests_per_s,2)+"/s":"–";
 const lastT=[...pts].reverse().find(p=>p.ttft_p95_s!==null);
 $("ttft").textContent=lastT?secs(lastT.ttft_p95_s):"–";
 $("ttft-note").textContent=lastT?(lastT===last?"last interval":"latest, "+Math.round(last.t-lastT.t)+" s ago"):"no request yet";
 const sensors=cur.sensors||[],temps=sensors.filter(s=>s.kind==="temperature"),pw=sensors.filter(s=>s.kind==="power");
 $("hottest").textContent=temps.length?Math.max(...temps.map(s=>s.value)).toFixed(1)+" °C":"–";
 if(pw.length)$("power").textContent=Math.max(...pw.map(s=>s.value)).toFixed(1)+" W on the largest rail";
 $("sensor-table").innerHTML=sensors.length?"<tr><th>sensor</th><th>type</th><th class=n>value</th></tr>"+sensors.map(s=>
  `<tr><td>${esc(s.hw_id)}</td><td>${esc(s.hw_type)}</td><td class=n>${s.value.toFixed(1)} ${s.kind==="power"?"W":"°C"}</td></tr>`).join(""):"<tr><td>no sensors found</td></tr>";
 $("model-table").innerHTML="<tr><th>model</th><th class=n>sessions</th><th class=n>queue</th><th class=n>tok/s</th><th class=n>cache hits</th></tr>"+
  models.map(m=>`<tr><td>${esc(m.id)}${m.version?" v"+esc(m.version):""}${m.canary?` <span class=s>→ canary v${esc(m.canary.version)} ${m.canary.phase==="shadow"?"in the shadow ("+m.canary.shadow_percent+"% mirrored)":"at "+m.canary.percent+"%"}</span>`:""}</td><td class=n>${m.active} / ${m.max_sessions}</td><td class=n>${m.queued}</td><td class=n>${fmt(m.decode_tokens_per_second,1)}</td><td class=n>${m.prefix_cache&&m.prefix_cache.enabled?Math.round(100*m.prefix_cache.hit_rate)+"%":"off"}</td></tr>`).join("");
 const routes=cur.routes_total||{},total=Object.values(routes).reduce((a,b)=>a+b,0);
 if(total>0){const ks=Object.keys(routes).sort();
  $("route-bar").innerHTML=ks.map((k,i)=>`<div title="${esc(k)}" style="width:${100*routes[k]/total}%;background:${C[i%5]}"></div>`).join("");
  $("route-legend").innerHTML=ks.map((k,i)=>`<span><i class="dot" style="background:${C[i%5]}"></i>${esc(k)} ${Math.round(100*routes[k]/total)}%</span>`).join("")}
 const ups=ready.body.upstreams||[];
 if(ups.length)$("upstreams").innerHTML="<tr><th>upstream</th><th>kind</th><th>health</th></tr>"+ups.map(u=>
  `<tr><td>${esc(u.name)}</td><td>${esc(u.kind||"")}</td><td style="color:${u.healthy?"var(--ok)":"var(--bad)"}">${u.healthy?"healthy":"down"+(u.cause?" ("+esc(u.cause)+")":"")}</td></tr>`).join("");
 const ul=hist.uplink||{};
 if(ul.configured){const sp=ul.spool||{},ago=ul.last_success_unix?Math.max(0,Math.round(Date.now()/1000-ul.last_success_unix)):null;
  $("uplink").innerHTML=`<span style="color:${ul.up?"var(--ok)":"var(--bad)"}">${ul.up?"up":"down"}</span> · ${esc(ul.format)} to ${esc(ul.url)}<br>`+
   `spool <span id="uplink-records">${sp.records}</span> record(s), ${fmt(sp.bytes/1024,0)} of ${fmt(sp.max_bytes/1048576,0)} MiB`+
   ` · last success ${ago===null?"never":ago+" s ago"}`+(sp.gaps?` · ${sp.gaps} gap record(s)`:"")+(ul.last_error?`<br>${esc(ul.last_error)}`:"")}
 chart($("chart-tokens"),pts,[{name:"tokens/s",f:p=>p.tokens_per_s}],"");
 chart($("chart-ttft"),pts,[{name:"p50",f:p=>p.ttft_p50_s,dots:1},{name:"p95",f:p=>p.ttft_p95_s,dash:1,dots:1}]," s");
 chart($("chart-sessions"),pts,[{name:"in use",f:p=>p.sessions_used},{name:"maximum",f:p=>p.sessions_max,dash:1},{name:"queued",f:p=>p.queued}],"");
 $("updated").textContent=new Date().toLocaleTimeString();
 document.body.dataset.rendered=String(Number(document.body.dataset.rendered||0)+1)}
tick();setInterval(tick,2000);
</script></body></html>
)HTML");
  return *page;
}

}  // namespace outpost::api
