#include "engine/bench_data.h"

namespace ringlm::engine::bench_data {

const char* const kExtractionSchema = R"({
  "type": "object",
  "properties": {
    "product": {"type": "string", "maxLength": 60},
    "category": {"type": "string", "enum": ["electronics", "clothing", "home", "food", "books", "other"]},
    "sentiment": {"type": "string", "enum": ["positive", "neutral", "negative"]},
    "rating": {"type": "integer", "minimum": 1, "maximum": 5},
    "issues": {"type": "array", "items": {"type": "string", "maxLength": 60}, "maxItems": 3},
    "would_recommend": {"type": "boolean"}
  },
  "required": ["product", "category", "sentiment", "rating", "issues", "would_recommend"],
  "additionalProperties": false
})";

const std::vector<Sample>& extraction_samples() {
  static const std::vector<Sample> samples = {
      {"I bought the Aurora X2 wireless headphones three weeks ago. The sound is warm and detailed, the "
       "noise cancelling works well on the train, and the battery easily lasts my whole work week. My only "
       "complaints are that the ear cushions get warm after an hour and the companion app keeps asking me "
       "to log in again. Setup took two minutes. Compared with my old pair these feel sturdier, and the "
       "carrying case is a nice touch. For the price I think they are a very good deal and I have already "
       "told two colleagues to get them. Four stars because of the app.",
       true},
      {"Great socks, warm and soft. Five stars.", false},
      {"The cast iron skillet arrived with a crack along the handle. I contacted support, who asked for "
       "photos, then told me the return window had closed even though it arrived only yesterday. The pan "
       "itself seems heavy and well made, and the pre-seasoning looked even, but a cracked handle on a "
       "heavy pan is a safety problem. I would not buy from this shop again and cannot recommend it. One "
       "star, and that is generous given how the complaint was handled.",
       true},
      {"Book was fine. Nothing special, three stars.", false},
      {"We ordered the FreshBox weekly vegetable subscription for our family of four. Most weeks the "
       "produce is fresh and the recipes are easy, though twice the spinach was wilted and once a whole "
       "bag of potatoes was missing. Customer service refunded the missing item quickly. Delivery is "
       "always on time, early on Saturday morning. It saves us a trip to the market and the kids like the "
       "recipe cards. Overall three or four stars; I'd say four, and yes I would recommend it to friends "
       "who cook at home a lot.",
       true},
      {"Cheap phone charger died after two days. Avoid.", false},
      {"The Meridian standing desk took about an hour to assemble with two people. The motor is quiet and "
       "the memory presets are handy, but the desktop wobbles a little at full standing height and one of "
       "the cable trays was missing screws. Still, my back feels better after a month of switching between "
       "sitting and standing. It is solidly built, the finish is nice, and the price was fair. I'd give it "
       "four out of five and recommend it, with the caveat about the wobble if you are tall.",
       true},
      {"Lovely linen shirt, fits perfectly. Would recommend.", false},
      {"I was excited about the SmartBrew coffee maker, but the Wi-Fi scheduling never worked reliably: "
       "half the mornings it simply did not start. The coffee itself is good when it does brew, and the "
       "thermal carafe keeps it hot for hours. The water tank is hard to fill without spilling and the "
       "manual is vague. After two firmware updates the scheduling is still flaky. Two stars: decent "
       "coffee, unreliable smart features, and not worth the premium over a plain machine. I would not "
       "recommend it.",
       true},
      {"Decent lamp. Bulb not included. Three stars.", false},
  };
  return samples;
}

std::string filler_paragraph(int index) {
  static const char* const sentences[] = {
      "The river bends slowly past the old mill, where the water turns grey under the clouds.",
      "In the market square, traders set out crates of apples, pears and late summer plums.",
      "A narrow lane climbs between stone walls towards the chapel on the hill.",
      "Swallows gather on the telegraph wires as the evening air grows cooler.",
      "The library keeps its oldest maps in wide, shallow drawers that smell of dust and cedar.",
      "Fishing boats return at dusk, their lamps swinging above the harbour wall.",
      "On the plateau, the wind flattens the grass into long silver waves.",
      "The bakery opens before dawn, and the smell of bread drifts down the empty street.",
      "A heron stands motionless in the shallows, watching the reeds for movement.",
      "Rain gathers in the gutters and runs in thin streams towards the canal.",
      "The clock tower chimes the quarter hour, a little late as it always has been.",
      "Beyond the orchard, a path of flat stones leads to a footbridge over the brook.",
  };
  constexpr int n = sizeof(sentences) / sizeof(sentences[0]);
  std::string p;
  for (int i = 0; i < 5; ++i) {
    p += sentences[(index * 7 + i * 5) % n];
    p += ' ';
  }
  p += '\n';
  return p;
}

const std::vector<Needle>& needles() {
  static const std::vector<Needle> n = {
      {"The secret password for the lighthouse is 'amber-falcon-42'.",
       "What is the secret password for the lighthouse?", "amber-falcon-42"},
      {"Professor Okafor keeps her spare key inside a blue teapot shaped like a whale.",
       "Where does Professor Okafor keep her spare key?", "blue teapot"},
      {"The annual lantern festival in Velmora is held on the 17th of March.",
       "On which date is the lantern festival in Velmora held?", "17th of March"},
  };
  return n;
}

}  // namespace ringlm::engine::bench_data
