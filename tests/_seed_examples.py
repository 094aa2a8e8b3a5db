"""The InternLM2, ChatGLM3 and LMDeploy (InternLM v1) seed examples: their text and messages.

Used by ``render/test_seed_internlm_glm.py`` (each example rendered exactly; the normalisations
of the seed text are described there) and by the agent tests (the seeds' tool flows).
"""

from __future__ import annotations

import re

SEED_INTERNLM2_FUNCTION_CALL = """\
<|im_start|>system
You are InternLM2-Chat, a harmless AI assistant<|im_end|>
<|im_start|>system name=<|plugin|>
[
    {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {
                    "type": "string",
                    "description": "The city and state, e.g. San Francisco, CA"
                },
                "unit": {"type": "string"}
            },
            "required": ["location"]
        }
    }
]
<|im_end|>
<|im_start|>user
I want to know today's weather in Shanghai<|im_end|>
<|im_start|>assistant
Sure, I will search for the weather of Shanghai.<|action_start|><|plugin|>
{"name": "get_current_weather", "parameters": {"location": "Shanghai"}}<|action_end|><|im_end|>
<|im_start|>environment name=<|plugin|>
{"temperature": 22}<|im_end|>
<|im_start|>assistant
The weather in Shanghai is 22 celsius<|im_end|>"""

SEED_INTERNLM2_INTERPRETER = """\
<|im_start|>system
You are InternLM2-Chat, a harmless AI assistant<|im_end|>
<|im_start|>system name=<|interpreter|>
You now have access to a Jupyter notebook environment supporting Python code execution. Just send code to python to run in this stateful environment. This feature is suitable for:
- Data analysis or processing (such as data manipulation and graphic creation)
- Complex calculations (such as math and physics problems)
- Programming examples (for understanding programming concepts or language features)
- Text processing and analysis (including text analysis and natural language processing)
- Machine learning and data science (model training and data visualization)
- File operations and data import (handling CSV, JSON, etc. formats)<|im_end|>
<|im_start|>user
Please help me process and visualize this dataset.
<|im_end|>
<|im_start|>user name=file
[{"path": "data.csv", "size": "10K"}]<|im_end|>
<|im_start|>assistant
I have processed the data and visualized it for you.

<|action_start|><|interpreter|>
```python
import plotly.express as px
import pandas as pd

# Load the data into a pandas dataframe
df = pd.read_csv('data.csv')

# Create a scatter plot of rainfall vs wind direction
fig = px.scatter(df, x='WindDir9am', y='Rainfall', color='WindDir3pm',
                 labels={'WindDir9am': 'Wind Direction 9am', 'Rainfall': '

Rainfall', 'WindDir3pm': 'Wind Direction 3pm'},
                 title='Rainfall vs Wind Direction',
                 template='plotly_dark',
                 width=600, height=500)

# Add a hover effect to show the date
fig.update_traces(hovertemplate='<b>Date: %{text}</b><br>Wind Direction 9am: %{x}<br>Rainfall: %{y}<br>Wind Direction 3pm: %{marker.color}')

# Show the plot
fig.show()
```<|action_end|>
<|im_end|>
<|im_start|>environment name=<|interpreter|>
![image](xxx.png)
<|im_end|>
<|im_start|>assistant
Since the code output is not included here, I cannot provide specific chart content. However, if the code executed correctly, it should display a polar plot with two filled areas representing the relationship between wind direction at 9 am and rainfall, and between wind direction at 3 pm and rainfall, respectively. The values for each direction are based on the average rainfall calculated from the provided dataset. The chart should have a clear title, a legend, and be intuitive for comparing rainfall with different wind directions. Given the use of a dark theme, the overall appearance of the chart should be bright lines and filled areas on a dark background.<|im_end|>
<|im_start|>user
Can you explain the code?<|im_end|>
<|im_start|>assistant
The code uses Python's Plotly library to create a polar plot that shows the relationship between wind direction and rainfall. It starts by creating a Plotly Figure object. Then, I added two `Scatterpolar` traces. The first trace shows the relationship between wind direction at 9 am and average rainfall, and the second trace shows the same for 3 pm. In these traces, the `r` parameter represents the average rainfall, and `theta` represents the wind direction. `fill='toself'` means the shape is filled to its own boundary. Next, I updated the chart layout, hid the radial axis, added a legend, set the title and its font, chose a dark theme, and set the chart's background color, width, and height. Finally, the chart was displayed using `fig.show()`.
<|im_end|>"""

SEED_INTERNLM2_COMBINED = """\
<|im_start|>system
You are InternLM2-Chat, a harmless AI assistant<|im_end|>
<|im_start|>system name=<|interpreter|>
You now have access to a Jupyter notebook environment supporting Python code execution. Just send code to python to run in this stateful environment. This feature is suitable for:
- Data analysis or processing (such as data manipulation and graphic creation)
- Complex calculations (such as math and physics problems)
- Programming examples (for understanding programming concepts or language features)
- Text processing and analysis (including text analysis and natural language processing)
- Machine learning and data science (model training and data visualization)
- File operations and data import (handling CSV, JSON, etc. formats)<|im_end|>
<|im_start|>system name=<|plugin|>
[
    {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {
                    "type": "string",
                    "description": "The city and state, e.g. San Francisco, CA"
                },
                "unit": {"type": "string"}
            },
            "required": ["location"]
        }
    }
]
<|im_end|>
<|im_start|>user
Please help me process and visualize this dataset.
<|im_end|>
<|im_start|>user name=file
[{"path": "data.csv", "size": "10K"}]<|im_end|>
<|im_start|>assistant
I have processed the data and visualized it for you.

<|action_start|><|interpreter|>
```python
import plotly.express as px
import pandas as pd

# Load the data into a pandas dataframe
df = pd.read_csv('data.csv')

# Create a scatter plot of rainfall vs wind direction
fig = px.scatter(df, x='WindDir9am', y='Rainfall', color='WindDir3pm',
                 labels={'WindDir9am': 'Wind Direction 9am', 'Rainfall': '

Rainfall', 'WindDir3pm': 'Wind Direction 3pm'},
                 title='Rainfall vs Wind Direction',
                 template='plotly_dark',
                 width=600, height=500)

# Add a hover effect to show the date
fig.update_traces(hovertemplate='<b>Date: %{text}</b><br>Wind Direction 9am: %{x}<br>Rainfall: %{y}<br>Wind Direction 3pm: %{marker.color}')

# Show the plot
fig.show()
```<|action_end|>
<|im_end|>
<|im_start|>environment name=<|interpreter|>
![image](xxx.png)
<|im_end|>
<|im_start|>assistant
Since the code output is not included here, I cannot provide specific chart content. However, if the code executed correctly, it should display a polar plot with two filled areas representing the relationship between wind direction at 9 am and rainfall, and between wind direction at 3 pm and rainfall, respectively. The values for each direction are based on the average rainfall calculated from the provided dataset. The chart should have a clear title, a legend, and be intuitive for comparing rainfall with different wind directions. Given the use of a dark theme, the overall appearance of the chart should be bright lines and filled areas on a dark background.<|im_end|>
<|im_start|>user
Can you explain the code?<|im_end|>
<|im_start|>assistant
The code uses Python's Plotly library to create a polar plot that shows the relationship between wind direction and rainfall. It starts by creating a Plotly Figure object. Then, I added two `Scatterpolar` traces. The first trace shows the relationship between wind direction at 9 am and average rainfall, and the second trace shows the same for 3 pm. In these traces, the `r` parameter represents the average rainfall, and `theta` represents the wind direction. `fill='toself'` means the shape is filled to its own boundary. Next, I updated the chart layout, hid the radial axis, added a legend, set the title and its font, chose a dark theme, and set the chart's background color, width, and height. Finally, the chart was displayed using `fig.show()`.
<|im_end|>
<|im_start|>user
I want to know today's weather in Shanghai<|im_end|>
<|im_start|>assistant
Sure, I will search for the weather of Shanghai.<|action_start|><|plugin|>
{"name": "get_current_weather", "parameters": {"location": "Shanghai"}}<|action_end|><|im_end|>
<|im_start|>environment name=<|plugin|>
{"temperature": 22}<|im_end|>
<|im_start|>assistant
The weather in Shanghai is 22 celsius<|im_end|>"""

SEED_INTERNLM2_FUNCTION_CALL_MESSAGES = [
    {"role": "system", "content": "You are InternLM2-Chat, a harmless AI assistant"},
    {"role": "user", "content": "I want to know today's weather in Shanghai"},
    {
        "role": "assistant",
        "content": "Sure, I will search for the weather of Shanghai.",
        "tool_calls": [
            {
                "id": "call_weather",
                "type": "function",
                "function": {
                    "name": "get_current_weather",
                    "arguments": '{"location": "Shanghai"}',
                },
            }
        ],
    },
    {"role": "tool", "content": '{"temperature": 22}', "tool_call_id": "call_weather"},
    {"role": "assistant", "content": "The weather in Shanghai is 22 celsius"},
]

SEED_INTERNLM2_INTERPRETER_MESSAGES = [
    {"role": "system", "content": "You are InternLM2-Chat, a harmless AI assistant"},
    {"role": "user", "content": "Please help me process and visualize this dataset.\n"},
    {"role": "user", "name": "file", "content": '[{"path": "data.csv", "size": "10K"}]'},
    {
        "role": "assistant",
        "content": "I have processed the data and visualized it for you.\n\n",
        "tool_calls": [
            {
                "id": "call_code",
                "type": "code_interpreter",
                "code_interpreter": {
                    "input": "import plotly.express as px\n"
                    "import pandas as pd\n"
                    "\n"
                    "# Load the data into a pandas dataframe\n"
                    "df = pd.read_csv('data.csv')\n"
                    "\n"
                    "# Create a scatter plot of rainfall vs wind "
                    "direction\n"
                    "fig = px.scatter(df, x='WindDir9am', "
                    "y='Rainfall', color='WindDir3pm',\n"
                    "                 labels={'WindDir9am': 'Wind "
                    "Direction 9am', 'Rainfall': '\n"
                    "\n"
                    "Rainfall', 'WindDir3pm': 'Wind Direction 3pm'},\n"
                    "                 title='Rainfall vs Wind "
                    "Direction',\n"
                    "                 template='plotly_dark',\n"
                    "                 width=600, height=500)\n"
                    "\n"
                    "# Add a hover effect to show the date\n"
                    "fig.update_traces(hovertemplate='<b>Date: "
                    "%{text}</b><br>Wind Direction 9am: "
                    "%{x}<br>Rainfall: %{y}<br>Wind Direction 3pm: "
                    "%{marker.color}')\n"
                    "\n"
                    "# Show the plot\n"
                    "fig.show()"
                },
            }
        ],
    },
    {"role": "tool", "content": "![image](xxx.png)\n", "tool_call_id": "call_code"},
    {
        "role": "assistant",
        "content": "Since the code output is not included here, I cannot provide specific chart content. "
        "However, if the code executed correctly, it should display a polar plot with two "
        "filled areas representing the relationship between wind direction at 9 am and "
        "rainfall, and between wind direction at 3 pm and rainfall, respectively. The values "
        "for each direction are based on the average rainfall calculated from the provided "
        "dataset. The chart should have a clear title, a legend, and be intuitive for "
        "comparing rainfall with different wind directions. Given the use of a dark theme, "
        "the overall appearance of the chart should be bright lines and filled areas on a "
        "dark background.",
    },
    {"role": "user", "content": "Can you explain the code?"},
    {
        "role": "assistant",
        "content": "The code uses Python's Plotly library to create a polar plot that shows the "
        "relationship between wind direction and rainfall. It starts by creating a Plotly "
        "Figure object. Then, I added two `Scatterpolar` traces. The first trace shows the "
        "relationship between wind direction at 9 am and average rainfall, and the second "
        "trace shows the same for 3 pm. In these traces, the `r` parameter represents the "
        "average rainfall, and `theta` represents the wind direction. `fill='toself'` means "
        "the shape is filled to its own boundary. Next, I updated the chart layout, hid the "
        "radial axis, added a legend, set the title and its font, chose a dark theme, and set "
        "the chart's background color, width, and height. Finally, the chart was displayed "
        "using `fig.show()`.\n",
    },
]

SEED_INTERNLM2_COMBINED_MESSAGES = (
    SEED_INTERNLM2_INTERPRETER_MESSAGES + SEED_INTERNLM2_FUNCTION_CALL_MESSAGES[1:]
)

SEED_CHATGLM3_CHAT = """\
<|system|>
You are ChatGLM3, a large language model trained by Zhipu.AI. Follow the user's instructions carefully. Respond using markdown.
<|user|>
Hello
<|assistant|>
Hello, I'm ChatGLM3. What can I assist you today?"""

SEED_CHATGLM3_TOOLS = """\
<|system|>
Answer the following questions as best as you can. You have access to the following tools:
[
    {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {
                    "type": "string",
                    "description": "The city and state, e.g. San Francisco, CA"
                },
                "unit": {"type": "string"}
            },
            "required": ["location"]
        }
    }
]
<|user|>
What's the weather in Beijing today?
<|assistant|>
Okay, let's look up the weather in Bejing today.
<|assistant|>get_current_weather
```python
tool_call(location="beijing", unit="celsius")
```
<|observation|>
{"temperature": 22}
<|assistant|>
According to the query results, the temperature in Beijing today is 22 degrees Celsius."""

SEED_CHATGLM3_CODE = """\
<|system|>
You are an intelligent AI assistant, named ChatGLM3. You are connected to a computer, but please note that you cannot connect to the internet. When using Python to solve tasks, you can run the code and get the results. If there are errors in the running results, you need to improve the code as much as possible. You can process files uploaded by users to your computer, and the default storage path for files is /mnt/data/.
<|user|>
#File: /mnt/data/metadata.jsonl
#Size: 35380
#File uploaded
Are there missing or abnormal values in the file?
<|assistant|>
Firstly, I will read the file you provided and review its contents to determine if there are missing or abnormal values.

We start by loading the file:
<|assistant|>interpreter
```python
import json

# Load the uploaded file
data = []
with open("/mnt/data/metadata.jsonl", 'r') as file:
for line in file:
data.append(json.loads(line))

# Display the first few records to get a sense of the data
data[:5]
```
<|observation|>
```result
[{'file_name': 'aceinthehole.png',
'name': 'Ace in the Hole',
'type': 'survivor',
'description': 'Lady Luck always seems to be throwing something good your way.'},
{'file_name': 'adrenaline.png',
'name': 'Adrenaline',
'type': 'survivor',
'description': 'You are fuelled by unexpected energy when on the verge of escape.'},
{'file_name': 'aftercare.png',
'name': 'Aftercare',
'type': 'survivor',
'description': "Unlocks potential in one's aura reading ability."},
{'file_name': 'agitation.png',
'name': 'Agitation',
'type': 'killer',
'description': 'You get excited in anticipation of hooking your prey.'},
{'file_name': 'alert.png',
'name': 'Alert',
'type': 'survivor',
'description': 'Your acute senses are on high alert.'}]
```
<|assistant|>
This file appears to contain metadata about certain items, each with the following fields:

- `file_name`
- `name`
- `type` (e.g. "survivor" or "killer")
- `description`

Next, I will check for missing values in these fields.
<|assistant|>interpreter
```python
# Check for missing values in each column
missing_values = {key: sum(1 for item in data if key not in item) for key in data[0].keys()}

missing_values
```
<|observation|>
```result
{'file_name': 0, 'name': 0, 'type': 0, 'description': 0}
```
<|assistant|>
Each field has no missing values. This means that each entry is complete.

Next, we can check for any potential outliers. This usually requires deeper analysis and understanding of the data, but I can start by examining some basic statistics and distributions. To do this, we can check the value distribution of the "type" field to see if there are any unexpected categories.
<|assistant|>interpreter
```python
# Check the distribution of values in the 'type' column
type_distribution = {key: sum(1 for item in data if item['type'] == key) for key in set(item['type'] for item in data)}

type_distribution
```
<|observation|>
```result
{'survivor': 116, 'killer': 103}
```
<|assistant|>
The 'type' field has two values: 'survivor' and 'killer'. Among them, 'survivor' has 116 entries, while 'killer' has 103 entries.

From this preliminary examination, we did not find any obvious abnormal values.

If you have any specific standards or other fields that need to be checked, I can provide you with a more detailed analysis. What else do you want me to check?
<|user|>
Help me draw a heart
<|assistant|>interpreter
```python
import numpy as np
import matplotlib.pyplot as plt

# The parametric equation for the shape of a heart
def heart(t):
x = 16 * np.sin(t) ** 3
y = 13 * np.cos(t) - 5 * np.cos(2 * t) - 2 * np.cos(3 * t) - np.cos(4 * t)
return x, y

t = np.linspace(0, 2 * np.pi, 1000)
x, y = heart(t)

plt.figure(figsize=(6, 6))
plt.plot(x, y, color='red')
plt.axis('equal')
plt.axis('off')
plt.show()
```
<|observation|>
```result
[Image]
```
<|assistant|>
This is a shape of heart. I used parametric equations to describe this shape and drew it using Matplotlib. If you have any other needs or questions, please feel free to let me know.
<|user|> # End"""

SEED_CHATGLM3_CODE_MESSAGES = [
    {
        "role": "user",
        "content": "#File: /mnt/data/metadata.jsonl\n"
        "#Size: 35380\n"
        "#File uploaded\n"
        "Are there missing or abnormal values in the file?",
    },
    {
        "role": "assistant",
        "content": "Firstly, I will read the file you provided and review its contents to determine if "
        "there are missing or abnormal values.\n"
        "\n"
        "We start by loading the file:",
        "tool_calls": [
            {
                "type": "code_interpreter",
                "code_interpreter": {
                    "input": "import json\n"
                    "\n"
                    "# Load the uploaded file\n"
                    "data = []\n"
                    "with open(\"/mnt/data/metadata.jsonl\", 'r') as "
                    "file:\n"
                    "for line in file:\n"
                    "data.append(json.loads(line))\n"
                    "\n"
                    "# Display the first few records to get a sense of "
                    "the data\n"
                    "data[:5]"
                },
            }
        ],
    },
    {
        "role": "tool",
        "content": "```result\n"
        "[{'file_name': 'aceinthehole.png',\n"
        "'name': 'Ace in the Hole',\n"
        "'type': 'survivor',\n"
        "'description': 'Lady Luck always seems to be throwing something good your way.'},\n"
        "{'file_name': 'adrenaline.png',\n"
        "'name': 'Adrenaline',\n"
        "'type': 'survivor',\n"
        "'description': 'You are fuelled by unexpected energy when on the verge of "
        "escape.'},\n"
        "{'file_name': 'aftercare.png',\n"
        "'name': 'Aftercare',\n"
        "'type': 'survivor',\n"
        "'description': \"Unlocks potential in one's aura reading ability.\"},\n"
        "{'file_name': 'agitation.png',\n"
        "'name': 'Agitation',\n"
        "'type': 'killer',\n"
        "'description': 'You get excited in anticipation of hooking your prey.'},\n"
        "{'file_name': 'alert.png',\n"
        "'name': 'Alert',\n"
        "'type': 'survivor',\n"
        "'description': 'Your acute senses are on high alert.'}]\n"
        "```",
    },
    {
        "role": "assistant",
        "content": "This file appears to contain metadata about certain items, each with the following "
        "fields:\n"
        "\n"
        "- `file_name`\n"
        "- `name`\n"
        '- `type` (e.g. "survivor" or "killer")\n'
        "- `description`\n"
        "\n"
        "Next, I will check for missing values in these fields.",
        "tool_calls": [
            {
                "type": "code_interpreter",
                "code_interpreter": {
                    "input": "# Check for missing values in each column\n"
                    "missing_values = {key: sum(1 for item in data if "
                    "key not in item) for key in data[0].keys()}\n"
                    "\n"
                    "missing_values"
                },
            }
        ],
    },
    {
        "role": "tool",
        "content": "```result\n{'file_name': 0, 'name': 0, 'type': 0, 'description': 0}\n```",
    },
    {
        "role": "assistant",
        "content": "Each field has no missing values. This means that each entry is complete.\n"
        "\n"
        "Next, we can check for any potential outliers. This usually requires deeper analysis "
        "and understanding of the data, but I can start by examining some basic statistics "
        'and distributions. To do this, we can check the value distribution of the "type" '
        "field to see if there are any unexpected categories.",
        "tool_calls": [
            {
                "type": "code_interpreter",
                "code_interpreter": {
                    "input": "# Check the distribution of values in the 'type' "
                    "column\n"
                    "type_distribution = {key: sum(1 for item in data "
                    "if item['type'] == key) for key in "
                    "set(item['type'] for item in data)}\n"
                    "\n"
                    "type_distribution"
                },
            }
        ],
    },
    {"role": "tool", "content": "```result\n{'survivor': 116, 'killer': 103}\n```"},
    {
        "role": "assistant",
        "content": "The 'type' field has two values: 'survivor' and 'killer'. Among them, 'survivor' has "
        "116 entries, while 'killer' has 103 entries.\n"
        "\n"
        "From this preliminary examination, we did not find any obvious abnormal values.\n"
        "\n"
        "If you have any specific standards or other fields that need to be checked, I can "
        "provide you with a more detailed analysis. What else do you want me to check?",
    },
    {"role": "user", "content": "Help me draw a heart"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "type": "code_interpreter",
                "code_interpreter": {
                    "input": "import numpy as np\n"
                    "import matplotlib.pyplot as plt\n"
                    "\n"
                    "# The parametric equation for the shape of a "
                    "heart\n"
                    "def heart(t):\n"
                    "x = 16 * np.sin(t) ** 3\n"
                    "y = 13 * np.cos(t) - 5 * np.cos(2 * t) - 2 * "
                    "np.cos(3 * t) - np.cos(4 * t)\n"
                    "return x, y\n"
                    "\n"
                    "t = np.linspace(0, 2 * np.pi, 1000)\n"
                    "x, y = heart(t)\n"
                    "\n"
                    "plt.figure(figsize=(6, 6))\n"
                    "plt.plot(x, y, color='red')\n"
                    "plt.axis('equal')\n"
                    "plt.axis('off')\n"
                    "plt.show()"
                },
            }
        ],
    },
    {"role": "tool", "content": "```result\n[Image]\n```"},
    {
        "role": "assistant",
        "content": "This is a shape of heart. I used parametric equations to describe this shape and "
        "drew it using Matplotlib. If you have any other needs or questions, please feel free "
        "to let me know.",
    },
]


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {
                    "type": "string",
                    "description": "The city and state, e.g. San Francisco, CA",
                },
                "unit": {"type": "string"},
            },
            "required": ["location"],
        },
    },
}
CODE_INTERPRETER = {"type": "code_interpreter"}

SEED_CHATGLM3_TOOLS_MESSAGES = [
    {"role": "user", "content": "What's the weather in Beijing today?"},
    {
        "role": "assistant",
        "content": "Okay, let's look up the weather in Bejing today.",
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {
                    "name": "get_current_weather",
                    "arguments": '{"location": "beijing", "unit": "celsius"}',
                },
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_0", "content": '{"temperature": 22}'},
    {
        "role": "assistant",
        "content": "According to the query results, the temperature in Beijing today is 22 degrees Celsius.",
    },
]

SEED_LMDEPLOY_INTERNLM_FIRST_TURN = """\
<|System|>:You are an AI assistant whose name is InternLM (书生·浦语).
- InternLM (书生·浦语) is a conversational language model that is developed by Shanghai AI Laboratory (上海人工智能实验室). It is designed to be helpful, honest, and harmless.
- InternLM (书生·浦语) can understand and communicate fluently in the language chosen by the user such as English and 中文.

<|User|>:你叫什么名字？
<|Bot|>:"""


def glm3_actual(readable: str) -> str:
    """The ChatGLM3 seed's text without its readability newline before each role token."""
    return re.sub(r"\n(?=<\|(?:system|user|assistant|observation)\|>)", "", readable)
